package llm

import (
	"testing"

	"github.com/gateway/gateway/sessions"
)

func TestToolResultTextKeepsPartsApart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content []sessions.Content
		want    string
	}{
		{"two parts", []sessions.Content{{Type: sessions.BlockText, Text: `{"a":1}`}, {Type: sessions.BlockText, Text: "42"}}, "{\"a\":1}\n\n42"},
		{"image between", []sessions.Content{{Type: sessions.BlockText, Text: "[image: image/png, 3 bytes]"},
			{Type: sessions.BlockImage, Data: "AAA", MimeType: "image/png"}, {Type: sessions.BlockText, Text: "caption"}},
			"[image: image/png, 3 bytes]\n\ncaption"},
		{"one part", []sessions.Content{{Type: sessions.BlockText, Text: "5"}}, "5"},
		{"empty parts skipped", []sessions.Content{{Type: sessions.BlockText}, {Type: sessions.BlockText, Text: "x"}}, "x"},
		{"nothing", nil, "(no output)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sessions.Message{Role: sessions.RoleToolResult, Content: tc.content}
			if got := ToolResultText(m); got != tc.want {
				t.Fatalf("ToolResultText = %q, want %q", got, tc.want)
			}
		})
	}
}
