package channels

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Choices (issue 23): the agent asks a question with buttons (the message
// tool's ask action); a press comes back as an inbound message of the same
// chat, its Text the chosen label, from the member who pressed.
//
// A button's callback data is never trusted: it is
// "c1.<nonce>.<index>.<issued>.<mac>", where mac is an HMAC-SHA256 (cut to
// 12 bytes) under the gateway's choice key over the channel, account, chat,
// nonce, index, issue time and the button's label. The adapter reads the
// label from the pressed message itself (Telegram's reply_markup, Discord's
// components), so a forged or altered data string, a button moved to
// another chat, or a label changed after signing fails Verify. Nothing in
// the data is a path or a command: the press's text is the label that was
// signed, and labels that look like commands are refused when asked.
//
// Every button of one question shares its nonce, and a press takes the
// pressed message's id as its MessageID: the journal's duplicate check lets
// one press per question through, durably, whoever presses; later presses
// (a second member, a double tap, a keyboard whose closing failed) are
// duplicates and get a short answer. After an accepted press the adapter
// closes the keyboard (Telegram: editMessageReplyMarkup; Discord: the
// interaction's UPDATE_MESSAGE with the buttons disabled).

// Limits of a question's choices.
const (
	MaxChoices     = 10
	MaxChoiceLabel = 40 // characters
	// DefaultChoiceTTL is how long a question's buttons stay valid.
	DefaultChoiceTTL = 7 * 24 * time.Hour
	// ChoiceKeySize is the size of the choice key in bytes.
	ChoiceKeySize = 32
)

// Choice is one button: the label shown (and sent back as the press's
// text) and its signed callback data.
type Choice struct {
	Label string
	Data  string
}

// Asker is implemented by adapters that can post a message with choice
// buttons.
type Asker interface {
	// Ask posts text as one message with a button per choice (out's
	// chat, thread or topic) and returns the message's id.
	Ask(ctx context.Context, out Outbound, text string, choices []Choice) (id string, err error)
}

// Answers a press gets; shown by the platform to the presser only.
const (
	PressAnsweredText = "This question was already answered."
	PressInvalidText  = "This button is not valid."
	PressExpiredText  = "This question has expired."
)

// Errors of ChoiceKeys.Verify.
var (
	ErrChoiceForged  = errors.New("choice: not a button this gateway signed")
	ErrChoiceExpired = errors.New("choice: the question has expired")
)

// CheckChoiceLabels returns an error naming the first label that may not
// be a button: empty, longer than MaxChoiceLabel, on several lines, looking
// like a command ("/…", "!…"), or repeated; and too few or too many.
func CheckChoiceLabels(labels []string) error {
	if len(labels) < 1 || len(labels) > MaxChoices {
		return fmt.Errorf("choices: %d given, want 1..%d", len(labels), MaxChoices)
	}
	seen := map[string]bool{}
	for i, l := range labels {
		switch {
		case strings.TrimSpace(l) != l || l == "":
			return fmt.Errorf("choices[%d]: %q: empty or with surrounding spaces", i, l)
		case utf8.RuneCountInString(l) > MaxChoiceLabel:
			return fmt.Errorf("choices[%d]: longer than %d characters", i, MaxChoiceLabel)
		case strings.ContainsAny(l, "\r\n\x00"):
			return fmt.Errorf("choices[%d]: on several lines", i)
		case strings.HasPrefix(l, "/") || strings.HasPrefix(l, "!"):
			return fmt.Errorf("choices[%d]: %q looks like a command; a button's text is never a command", i, l)
		case seen[strings.ToLower(l)]:
			return fmt.Errorf("choices[%d]: %q given twice", i, l)
		}
		seen[strings.ToLower(l)] = true
	}
	return nil
}

// ChoiceKeys signs and verifies choice buttons. It is safe for concurrent
// use and holds no state but its key.
type ChoiceKeys struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewChoiceKeys returns signer over key (ChoiceKeySize bytes); ttl 0 means
// DefaultChoiceTTL, now nil time.Now.
func NewChoiceKeys(key []byte, ttl time.Duration, now func() time.Time) (*ChoiceKeys, error) {
	if len(key) != ChoiceKeySize {
		return nil, fmt.Errorf("choice key: %d bytes, want %d", len(key), ChoiceKeySize)
	}
	if ttl <= 0 {
		ttl = DefaultChoiceTTL
	}
	if now == nil {
		now = time.Now
	}
	return &ChoiceKeys{key: append([]byte(nil), key...), ttl: ttl, now: now}, nil
}

// Question signs labels as the buttons of one question asked in chat a.
func (k *ChoiceKeys) Question(a Address, labels []string) ([]Choice, error) {
	if err := CheckChoiceLabels(labels); err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return k.sign(a, base64.RawURLEncoding.EncodeToString(b[:]), k.now(), labels), nil
}

// sign signs labels (checked) as the buttons of the question with nonce,
// issued at.
func (k *ChoiceKeys) sign(a Address, nonce string, at time.Time, labels []string) []Choice {
	issued := strconv.FormatInt(at.Unix()/60, 36)
	out := make([]Choice, len(labels))
	for i, l := range labels {
		idx := strconv.Itoa(i)
		out[i] = Choice{Label: l, Data: "c1." + nonce + "." + idx + "." + issued + "." + k.mac(a, nonce, idx, issued, l)}
	}
	return out
}

func (k *ChoiceKeys) mac(a Address, nonce, idx, issued, label string) string {
	m := hmac.New(sha256.New, k.key)
	for _, s := range []string{"gateway-choice-v1", a.Channel, a.AccountID, a.ChatID, nonce, idx, issued, label} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

// IsChoiceData reports whether data has the shape of a choice button's
// callback data (not whether it is valid).
func IsChoiceData(data string) bool { return strings.HasPrefix(data, "c1.") }

// Verify checks that data is the signed callback data of the button label
// in chat a and that the question has not expired. It returns the
// question's nonce.
func (k *ChoiceKeys) Verify(a Address, data, label string) (nonce string, err error) {
	parts := strings.Split(data, ".")
	if len(parts) != 5 || parts[0] != "c1" || label == "" {
		return "", ErrChoiceForged
	}
	nonce, idx, issued, mac := parts[1], parts[2], parts[3], parts[4]
	if !hmac.Equal([]byte(mac), []byte(k.mac(a, nonce, idx, issued, label))) {
		return "", ErrChoiceForged
	}
	mins, err := strconv.ParseInt(issued, 36, 64)
	if err != nil {
		return "", ErrChoiceForged
	}
	if k.expired(mins) {
		return "", ErrChoiceExpired
	}
	return nonce, nil
}

// ChoiceIssued returns the minute the buttons of data were issued (its
// signed time; call it only on data Verify accepted).
func ChoiceIssued(data string) (time.Time, bool) {
	parts := strings.Split(data, ".")
	if len(parts) != 5 || parts[0] != "c1" {
		return time.Time{}, false
	}
	mins, err := strconv.ParseInt(parts[3], 36, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(mins*60, 0).UTC(), true
}

// Expired reports whether the buttons of a question asked at have expired:
// Verify refuses a press of them with ErrChoiceExpired (their data carries
// the minute asked, so a press may be refused up to a minute before
// asked+ttl).
func (k *ChoiceKeys) Expired(asked time.Time) bool {
	return k.expired(asked.Unix() / 60)
}

// expired reports whether buttons issued in the minute mins (since the
// epoch) have expired.
func (k *ChoiceKeys) expired(mins int64) bool {
	return k.now().Sub(time.Unix(mins*60, 0)) > k.ttl
}

// PressAnswer is what a press that was not accepted gets told: "" for a
// press the access policy refused (it does nothing), else one of the
// Press*Text answers.
func PressAnswer(verifyErr, handlerErr error) string {
	switch {
	case errors.Is(verifyErr, ErrChoiceExpired):
		return PressExpiredText
	case verifyErr != nil:
		return PressInvalidText
	case errors.Is(handlerErr, ErrDuplicate):
		return PressAnsweredText
	case errors.Is(handlerErr, ErrChoiceExpired):
		// The handler's verdict: a question of a session since reset.
		return PressExpiredText
	}
	return ""
}

// WithoutBatch returns ctx without its Batch: a Handler called with it
// returns only once what it accepted is durable (a press closes its
// keyboard only after that).
func WithoutBatch(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchKey{}, (*Batch)(nil))
}
