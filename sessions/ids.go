package sessions

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckID reports whether id can name a journal record, reply or draft:
// it must be valid UTF-8 without NUL bytes. Such an id would not survive
// storage unchanged (the files journal's JSON turns invalid UTF-8 into
// U+FFFD, so after a restart the id no longer matches; PostgreSQL text
// refuses both), so Accept, Ready and Draft refuse it with this error
// instead of keeping a record nobody can finish. what names the id
// ("record", "reply", "draft").
func CheckID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty %s id", what)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s id %q is not valid UTF-8", what, id)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%s id %q contains a NUL byte", what, id)
	}
	return nil
}

// CheckSessionID accepts only a canonical lower-case UUID, the form of
// every session id (so a hostile id never reaches a path or a query).
func CheckSessionID(id string) error { return checkSessionID(id) }

// checkSessionID accepts only canonical lower-case UUID strings, so a session
// id can be joined to a directory without escaping it.
func checkSessionID(id string) error {
	if !canonicalUUID(id) {
		return fmt.Errorf("sessions: session id %q is not a canonical UUID", Clip(id))
	}
	return nil
}

// canonicalUUID reports whether id is a UUID as uuid.UUID.String writes
// it: 36 bytes, lower-case hex digits, dashes at 8, 13, 18 and 23 (what
// uuid.Parse accepts and renders back unchanged), checked without parsing
// or rendering: every message's transcript lookup checks its session id.
func canonicalUUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Clip shortens hostile input before it is quoted in an error.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
