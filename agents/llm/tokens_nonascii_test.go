package llm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEstimateTextNonASCII pins that the estimate counts bytes, not
// characters: a Chinese text (about one token a character for the
// models' tokenizers) is estimated near one token a character, not a
// quarter of one, so a CJK conversation reaches the compaction threshold
// before the provider refuses it; Cyrillic and emoji are not estimated
// below their characters' share either.
func TestEstimateTextNonASCII(t *testing.T) {
	for _, tc := range []struct {
		unit     string
		minShare float64 // tokens per character at least
	}{
		{"上下文窗口", 0.85},
		{"контекст", 0.5},
		{"🙂", 1.0},
	} {
		s := strings.Repeat(tc.unit, 1000)
		chars := utf8.RuneCountInString(s)
		if got := float64(EstimateText(s)) / float64(chars); got < tc.minShare {
			t.Errorf("%q: %.2f tokens a character, want at least %.2f", tc.unit, got, tc.minShare)
		}
	}
}
