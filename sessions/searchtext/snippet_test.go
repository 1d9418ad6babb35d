package searchtext

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	tests := []struct {
		name, text string
		words      []string
		want       string
	}{
		{"short", "Hello   there\nworld", []string{"world"}, "Hello there world"},
		{"long, match late", strings.Repeat("a ", 100) + "NEEDLE end", []string{"needle"},
			"…" + strings.Repeat("a ", SnippetRunes/2-5) + "NEEDLE end"},
		{"long, match early", "needle " + strings.Repeat("b ", 100), []string{"needle"},
			string([]rune("needle " + strings.Repeat("b ", 100))[:SnippetRunes]) + "…"},
		{"cjk", "关于会话存储的讨论", []string{"存储"}, "关于会话存储的讨论"},
	}
	for _, tt := range tests {
		if got := Snippet(tt.text, tt.words); got != tt.want {
			t.Errorf("%s: Snippet = %q, want %q", tt.name, got, tt.want)
		}
	}
}
