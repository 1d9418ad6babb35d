package api

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUserSafeCutsWholeCharacters: an error shortened for an answer is cut
// between characters (a cut inside one showed as U+FFFD in the JSON).
func TestUserSafeCutsWholeCharacters(t *testing.T) {
	got := userSafe(errors.New("x" + strings.Repeat("é", 150)))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "é…") || len(got) > 200+len("…") {
		t.Errorf("userSafe = %q (%d bytes), want whole characters up to 200 bytes, then …", got, len(got))
	}
}
