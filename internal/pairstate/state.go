package pairstate

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// State stores the pairing data of each channel (pending requests and
// approved senders); package access owns the rules (codes, expiry, caps)
// and calls it. A channel must pass CheckChannel and the data stored
// CheckData (every entry of the channel, no NUL): anything else is refused
// with an error naming it. Times are kept to the microsecond at least.
// Implementations are safe for concurrent use by goroutines and processes.
type State interface {
	// LoadPairing returns channel's data (empty when none is stored); the
	// caller owns the slices.
	LoadPairing(ctx context.Context, channel string) (Data, error)
	// UpdatePairing runs fn on channel's data, serialised with every other
	// update of channel (across processes), and stores the result when fn
	// reports a change. fn's error is returned as it is and stores
	// nothing; fn must be quick and must not call the State.
	UpdatePairing(ctx context.Context, channel string, fn func(*Data) (changed bool, err error)) error
	// PairingChannels lists the channels with stored data, sorted.
	PairingChannels(ctx context.Context) ([]string, error)
}

// Data is one channel's pairing state.
type Data struct {
	Pending []Request  `json:"pending"`
	Allowed []Approval `json:"allowed"`
}

// Clone returns a copy of d that shares no slice with it.
func (d Data) Clone() Data {
	return Data{Pending: slices.Clone(d.Pending), Allowed: slices.Clone(d.Allowed)}
}

// Request is a pending pairing request: an unknown DM sender and the code
// it was given.
type Request struct {
	Channel    string    `json:"channel"`
	AccountID  string    `json:"accountId"`
	Code       string    `json:"code"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	ChatID     string    `json:"chatId,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Approval is a sender admitted by an operator.
type Approval struct {
	Channel    string    `json:"channel"`
	AccountID  string    `json:"accountId"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	Code       string    `json:"code,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// MaxField is the longest string field of pairing data, in bytes.
const MaxField = 1024

// channelName is what a channel name looks like: it names a file
// (<channel>.json) in the files implementation.
var channelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckChannel returns an error unless channel is a valid channel name:
// lower-case letters, digits, '_' and '-', 1 to 64 bytes, starting with a
// letter or digit. Nothing else reaches a file name or a query.
func CheckChannel(channel string) error {
	if !channelName.MatchString(channel) {
		return fmt.Errorf("pairing: %s is not a channel name (want 1-64 of a-z 0-9 _ -)", QuoteClip(channel))
	}
	return nil
}

// CheckData returns an error unless every request and approval of d
// belongs to channel and every string field is valid UTF-8 without NUL and
// at most MaxField bytes: what PostgreSQL's text type stores exactly.
func CheckData(channel string, d Data) error {
	for i, r := range d.Pending {
		if r.Channel != channel {
			return fmt.Errorf("pairing %s: pending[%d] is of channel %s", channel, i, QuoteClip(r.Channel))
		}
		if err := checkFields("pending", i, [][2]string{{"accountId", r.AccountID}, {"code", r.Code},
			{"senderId", r.SenderID}, {"senderName", r.SenderName}, {"chatId", r.ChatID}}); err != nil {
			return fmt.Errorf("pairing %s: %w", channel, err)
		}
	}
	for i, a := range d.Allowed {
		if a.Channel != channel {
			return fmt.Errorf("pairing %s: allowed[%d] is of channel %s", channel, i, QuoteClip(a.Channel))
		}
		if err := checkFields("allowed", i, [][2]string{{"accountId", a.AccountID}, {"code", a.Code},
			{"senderId", a.SenderID}, {"senderName", a.SenderName}}); err != nil {
			return fmt.Errorf("pairing %s: %w", channel, err)
		}
	}
	return nil
}

// checkFields checks the (name, value) pairs of list[i].
func checkFields(list string, i int, fields [][2]string) error {
	for _, f := range fields {
		if err := CheckText(f[1], MaxField); err != nil {
			return fmt.Errorf("%s[%d].%s: %w", list, i, f[0], err)
		}
	}
	return nil
}

// CheckText returns an error unless s is valid UTF-8 without NUL and at
// most max bytes.
func CheckText(s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%d bytes, longer than %d", len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("contains NUL")
	}
	return nil
}

// QuoteClip quotes s for an error message, cut to 64 bytes.
func QuoteClip(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
