package searchtext

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello, WORLD! hello", []string{"hello", "world"}},
		{"don't stop-me now_2", []string{"don", "t", "stop", "me", "now", "2"}},
		{"Ünïcode Straße", []string{"ünïcode", "straße"}},
		{"会话存储", []string{"会话", "话存", "存储"}},
		{"用 gateway 搜索", []string{"用", "gateway", "搜索"}},
		{"", nil},
		{"?!", nil},
		{strings.Repeat("a", 100), []string{strings.Repeat("a", MaxTokenBytes)}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Tokens(tt.in)); diff != "" {
			t.Errorf("Tokens(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
