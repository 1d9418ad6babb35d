package channels

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"
)

// Questions whose id the gateway chooses (the web chat's): the nonce of
// their buttons is derived from the question's id, so the signature covers
// the id too. A press names the question it answers (the id is its
// inbound message id, which the journal's duplicate check keys on), and
// VerifyQuestion refuses a press whose id is not the one its data was
// signed for: a client cannot turn one question into many by changing the
// id. The buttons can be signed again from what the transcript keeps (the
// id, the labels, the time asked), so nothing secret is stored with the
// question: the web page's history redraws them (api/questions.go).

// QuestionFor signs labels as the buttons of question id asked in chat a
// at asked (the time their expiry counts from; zero: now).
func (k *ChoiceKeys) QuestionFor(a Address, id string, asked time.Time, labels []string) ([]Choice, error) {
	if id == "" {
		return nil, errors.New("choices: question without an id")
	}
	if err := CheckChoiceLabels(labels); err != nil {
		return nil, err
	}
	if asked.IsZero() {
		asked = k.now()
	}
	return k.sign(a, questionNonce(id), asked, labels), nil
}

// VerifyQuestion checks, as Verify does, that data is the signed callback
// data of the button label in chat a, and that it was signed by
// QuestionFor for question id: ErrChoiceForged otherwise.
func (k *ChoiceKeys) VerifyQuestion(a Address, id, data, label string) error {
	nonce, err := k.Verify(a, data, label)
	if err != nil {
		return err
	}
	if nonce != questionNonce(id) {
		return ErrChoiceForged
	}
	return nil
}

// questionNonce is the nonce of question id's buttons: as long as a random
// one (8 characters).
func questionNonce(id string) string {
	h := sha256.Sum256([]byte("gateway-choice-question\x00" + id))
	return base64.RawURLEncoding.EncodeToString(h[:6])
}
