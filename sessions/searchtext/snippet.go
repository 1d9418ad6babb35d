package searchtext

import (
	"slices"
	"strings"
	"unicode"
)

// SnippetRunes is about how long a hit's snippet is.
const SnippetRunes = 160

// Snippet returns about SnippetRunes runes of text around the first place
// where one of words (lower-case, as Tokens gives them) occurs,
// whitespace collapsed, with "…" where it was cut.
func Snippet(text string, words []string) string {
	runes := []rune(strings.Join(strings.Fields(text), " "))
	lower := make([]rune, len(runes))
	for i, r := range runes {
		lower[i] = unicode.ToLower(r)
	}
	at := -1
	for _, w := range words {
		if i := indexRunes(lower, []rune(w)); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	start := 0
	if at > SnippetRunes/4 {
		start = at - SnippetRunes/4
	}
	end := min(start+SnippetRunes, len(runes))
	if end-start < SnippetRunes {
		start = max(0, end-SnippetRunes)
	}
	s := string(runes[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(runes) {
		s += "…"
	}
	return s
}

func indexRunes(s, sub []rune) int {
	if len(sub) == 0 {
		return -1
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}
