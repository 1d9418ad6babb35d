package discordtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The nonce rule of message creation, as Discord documents it: a post may
// carry a nonce (an integer or a string of at most 25 characters); with
// enforce_nonce true, if the same author created a message with the same
// nonce in the past few minutes, that message is returned and no new one
// is created. The fake's only author is the bot, so nonces are kept per
// server, for NonceWindow.

// DefaultNonceWindow is how long a nonce is remembered when
// Options.NonceWindow is zero ("the past few minutes").
const DefaultNonceWindow = 5 * time.Minute

// messageBody is a message post: discordgo's fields plus the nonce ones,
// which its MessageSend lacks.
type messageBody struct {
	discordgo.MessageSend
	// Components shadows the embedded field, which JSON cannot decode
	// into (an interface slice): components.go reads it.
	Components   json.RawMessage `json:"components"`
	Nonce        json.RawMessage `json:"nonce"`
	EnforceNonce bool            `json:"enforce_nonce"`
}

// nonce returns the post's nonce as text ("" without one), or why it is
// invalid.
func (b messageBody) nonce() (string, error) {
	if len(b.Nonce) == 0 || string(b.Nonce) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(b.Nonce, &s); err == nil {
		if len(s) > 25 {
			return "", errors.New("must be 25 or fewer in length")
		}
		return s, nil
	}
	var n int64
	if err := json.Unmarshal(b.Nonce, &n); err != nil {
		return "", errors.New("must be an integer or a string")
	}
	return strconv.FormatInt(n, 10), nil
}

// nonceBook is the server's record of nonces; guarded by Server.mu.
type nonceBook struct {
	byNonce map[string]nonceSeen
	repeats int // posts answered with an earlier message
	lose    int // next created posts whose answer is lost
	// loseStatus is the status of a lost answer (500 when zero).
	loseStatus int
}

type nonceSeen struct {
	msg *discordgo.Message
	at  time.Time
}

// seen returns the message nonce created within window, or nil.
func (b *nonceBook) seen(nonce string, window time.Duration) *discordgo.Message {
	e, ok := b.byNonce[nonce]
	if !ok || time.Since(e.at) > window {
		return nil
	}
	return e.msg
}

func (b *nonceBook) note(nonce string, m *discordgo.Message) {
	if b.byNonce == nil {
		b.byNonce = map[string]nonceSeen{}
	}
	b.byNonce[nonce] = nonceSeen{msg: m, at: time.Now()}
}

// loseAnswer reports whether the answer to the post just created is to be
// lost, counting it.
func (b *nonceBook) loseAnswer() bool {
	if b.lose > 0 {
		b.lose--
		return true
	}
	return false
}

func (s *Server) nonceWindow() time.Duration {
	if s.opts.NonceWindow > 0 {
		return s.opts.NonceWindow
	}
	return DefaultNonceWindow
}

// LoseAnswerNext makes the next n message posts create their message but
// answer 500, as when the answer is lost on the way back: the bot cannot
// tell whether its message was posted.
func (s *Server) LoseAnswerNext(n int) { s.LoseAnswerNextWith(n, http.StatusInternalServerError) }

// LoseAnswerNextWith is LoseAnswerNext answering status instead: 502 Bad
// Gateway (a proxy between the bot and Discord failing on the way back)
// is one discordgo retries by itself.
func (s *Server) LoseAnswerNextWith(n, status int) {
	s.mu.Lock()
	s.nonces.lose, s.nonces.loseStatus = n, status
	s.mu.Unlock()
}

// NonceRepeats is how many posts were answered with the message an earlier
// post of the same nonce created (enforce_nonce), creating nothing.
func (s *Server) NonceRepeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nonces.repeats
}
