package routing

import (
	"regexp"
	"strings"
	"testing"
)

// idPattern is the definition ValidID implements without a regexp.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func TestValidIDMatchesPattern(t *testing.T) {
	cases := []string{"", "a", "0", "_", "-", "_a", "-a", "a_", "a-", "main", "Main", "ops-2_x",
		"a b", "a:b", "a.b", "é", "aé", "a\x00", "\xff", "a\n",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 64) + "\n"}
	for c := byte(0); c < 128; c++ {
		cases = append(cases, string([]byte{c}), "a"+string([]byte{c}))
	}
	for _, s := range cases {
		if got, want := ValidID(s), idPattern.MatchString(s); got != want {
			t.Errorf("ValidID(%q) = %v, pattern says %v", s, got, want)
		}
	}
}

func FuzzValidID(f *testing.F) {
	f.Add("main")
	f.Add("-x")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidID(s), idPattern.MatchString(s); got != want {
			t.Errorf("ValidID(%q) = %v, pattern says %v", s, got, want)
		}
	})
}
