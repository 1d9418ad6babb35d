package routing

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxIDLen is the longest agent, account, channel or main-key id.
const MaxIDLen = 64

// MaxPeerLen is the longest peer or thread id accepted, in bytes, before escaping.
const MaxPeerLen = 256

// ErrEmptyID is returned when an id that must be present is empty.
var ErrEmptyID = errors.New("empty id")

// ValidID reports whether s is already a normalised agent/account/channel
// id: ^[a-z0-9][a-z0-9_-]{0,63}$, checked byte by byte (it runs for every
// key parsed, where a regexp was most of Parse's cost).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen || s[0] == '_' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// NormalizeID lower-cases s, turns every run of characters outside
// [a-z0-9_-] into '-', trims leading '-'/'_' and cuts the result to 64
// characters. It fails when nothing usable is left.
func NormalizeID(s string) (string, error) {
	if s == "" {
		return "", ErrEmptyID
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' || r == '-'
		if !ok {
			if !dash {
				b.WriteByte('-')
				dash = true
			}
			continue
		}
		dash = r == '-'
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "-_")
	if len(out) > MaxIDLen {
		out = strings.TrimRight(out[:MaxIDLen], "-_")
	}
	if !ValidID(out) {
		return "", fmt.Errorf("id %q: nothing usable after normalising", truncate(s))
	}
	return out, nil
}

// escapePeer makes an opaque peer/thread id safe as one key component.
// It percent-encodes '%', ':', '/', '\\', control bytes, bytes that are not
// part of valid UTF-8 and every '.' that follows a '.', so the output never
// holds a separator, a path separator, NUL or "..", and is valid UTF-8 (a
// JSON index or a PostgreSQL text column stores it unchanged). Decoding is
// exact, so two distinct ids never collide.
func escapePeer(s string) string {
	if !needsEscape(s) {
		return s // the usual id (digits): the key's builder copies it, nothing else to allocate
	}
	var b strings.Builder
	prevDot := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' || c == ':' || c == '/' || c == '\\' || c < 0x20 || c == 0x7f || (c == '.' && prevDot):
			fmt.Fprintf(&b, "%%%02X", c)
		case c >= utf8.RuneSelf:
			if r, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
				fmt.Fprintf(&b, "%%%02X", c)
			} else {
				b.WriteString(s[i : i+n])
				i += n - 1
			}
		default:
			b.WriteByte(c)
		}
		prevDot = c == '.'
	}
	return b.String()
}

// needsEscape reports whether escapePeer would change s.
func needsEscape(s string) bool {
	prevDot := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' || c == ':' || c == '/' || c == '\\' || c < 0x20 || c == 0x7f || (c == '.' && prevDot):
			return true
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return true
			}
			i += n - 1
		}
		prevDot = c == '.'
	}
	return false
}

func unescapePeer(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape at byte %d", i)
		}
		var v byte
		for _, h := range []byte{s[i+1], s[i+2]} {
			v <<= 4
			switch {
			case h >= '0' && h <= '9':
				v |= h - '0'
			case h >= 'A' && h <= 'F':
				v |= h - 'A' + 10
			default:
				return "", fmt.Errorf("bad escape at byte %d", i)
			}
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}

// checkPeer validates a raw (unescaped) peer or thread id.
func checkPeer(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s: %w", what, ErrEmptyID)
	}
	if len(s) > MaxPeerLen {
		return fmt.Errorf("%s: %d bytes, longer than %d", what, len(s), MaxPeerLen)
	}
	return nil
}

// checkComponent validates an escaped component as it appears in a key.
// n is its 1-based position, named in the error (and only there: Parse
// runs for every reply, so the name is not formatted in advance).
func checkComponent(n int, s string) error {
	if s == "" {
		return fmt.Errorf("component %d: %w", n, ErrEmptyID)
	}
	if strings.ContainsAny(s, ":/\\\x00") || strings.Contains(s, "..") {
		return fmt.Errorf("component %d %q: contains a forbidden character", n, truncate(s))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
