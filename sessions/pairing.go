package sessions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names and values the pairing and cursor stores accept. Both backends
// refuse anything else with an error naming what is wrong, before it
// reaches a file name or a query: a channel or scope from a chat never
// becomes a path outside the state dir, and PostgreSQL's text type (which
// holds no NUL and only valid UTF-8) stores exactly what the files do.
const (
	// MaxCursorScope is the longest cursor scope, in bytes. Escaped for a
	// file name (at most three bytes per byte) it stays under the 255-byte
	// limit of common file systems.
	MaxCursorScope = 80
	// MaxCursorName is the longest cursor name, in bytes.
	MaxCursorName = 200
	// MaxCursorValue is the longest cursor value, in bytes.
	MaxCursorValue = 64 << 10
	// maxPairingField is the longest string field of pairing data.
	maxPairingField = 1024
)

// pairingChannel is what a pairing channel name looks like: it names a
// file (<channel>.json) in the files backend.
var pairingChannel = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckPairingChannel returns an error unless channel is a valid pairing
// channel name: lower-case letters, digits, '_' and '-', 1 to 64 bytes,
// starting with a letter or digit.
func CheckPairingChannel(channel string) error {
	if !pairingChannel.MatchString(channel) {
		return fmt.Errorf("sessions: pairing: %s is not a channel name (want 1-64 of a-z 0-9 _ -)", quoteClip(channel))
	}
	return nil
}

// CheckPairingData returns an error unless every request and approval of d
// belongs to channel and every string field is valid UTF-8 without NUL and
// at most 1 KiB.
func CheckPairingData(channel string, d PairingData) error {
	for i, r := range d.Pending {
		if r.Channel != channel {
			return fmt.Errorf("sessions: pairing %s: pending[%d] is of channel %s", channel, i, quoteClip(r.Channel))
		}
		if err := checkFields("pending", i, [][2]string{{"accountId", r.AccountID}, {"code", r.Code},
			{"senderId", r.SenderID}, {"senderName", r.SenderName}, {"chatId", r.ChatID}}); err != nil {
			return fmt.Errorf("sessions: pairing %s: %w", channel, err)
		}
	}
	for i, a := range d.Allowed {
		if a.Channel != channel {
			return fmt.Errorf("sessions: pairing %s: allowed[%d] is of channel %s", channel, i, quoteClip(a.Channel))
		}
		if err := checkFields("allowed", i, [][2]string{{"accountId", a.AccountID}, {"code", a.Code},
			{"senderId", a.SenderID}, {"senderName", a.SenderName}}); err != nil {
			return fmt.Errorf("sessions: pairing %s: %w", channel, err)
		}
	}
	return nil
}

// checkFields checks the (name, value) pairs of list[i].
func checkFields(list string, i int, fields [][2]string) error {
	for _, f := range fields {
		if err := checkText(f[1], maxPairingField); err != nil {
			return fmt.Errorf("%s[%d].%s: %w", list, i, f[0], err)
		}
	}
	return nil
}

// CheckCursor returns an error unless scope (1 to MaxCursorScope bytes),
// name (1 to MaxCursorName bytes) and value (at most MaxCursorValue bytes)
// are valid UTF-8 without NUL.
func CheckCursor(scope, name, value string) error {
	if err := CheckCursorScope(scope); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("sessions: cursor %s: empty name", quoteClip(scope))
	}
	if err := checkText(name, MaxCursorName); err != nil {
		return fmt.Errorf("sessions: cursor %s name %s: %w", quoteClip(scope), quoteClip(name), err)
	}
	if err := checkText(value, MaxCursorValue); err != nil {
		return fmt.Errorf("sessions: cursor %s name %s value: %w", quoteClip(scope), quoteClip(name), err)
	}
	return nil
}

// CheckCursorScope is the scope part of CheckCursor.
func CheckCursorScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("sessions: cursor: empty scope")
	}
	if err := checkText(scope, MaxCursorScope); err != nil {
		return fmt.Errorf("sessions: cursor scope %s: %w", quoteClip(scope), err)
	}
	return nil
}

func checkText(s string, max int) error {
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

// quoteClip quotes s for an error message, cut to 64 bytes.
func quoteClip(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
