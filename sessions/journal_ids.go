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
