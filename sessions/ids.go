package sessions

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
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
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("sessions: session id %q is not a canonical UUID", Clip(id))
	}
	return nil
}

// Clip shortens hostile input before it is quoted in an error.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
