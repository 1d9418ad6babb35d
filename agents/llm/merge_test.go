package llm

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

func text(role, s string) sessions.Message {
	return sessions.Message{Role: role, Content: []sessions.Content{{Type: sessions.BlockText, Text: s}}}
}

// TestMergeSameRole: consecutive messages of one role become one with
// "\n\n" between their texts, for assistants as for users; an assistant
// that calls a tool and tool results stay apart.
func TestMergeSameRole(t *testing.T) {
	call := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{
		{Type: sessions.BlockToolCall, ID: "c1", Name: "x", Arguments: json.RawMessage(`{}`)}}}
	res := func(id string) sessions.Message {
		return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: id, Content: []sessions.Content{{Type: sessions.BlockText, Text: id}}}
	}
	in := []sessions.Message{
		text("user", "a"), text("user", "b"),
		text("assistant", "c"), text("assistant", "d"), call, res("c1"), res("c2"),
		text("assistant", "e"), text("user", "f"),
	}
	orig := append([]sessions.Message(nil), in...)
	got := MergeSameRole(in)
	want := []sessions.Message{
		text("user", "a\n\nb"),
		{Role: "assistant", Content: []sessions.Content{{Type: sessions.BlockText, Text: "c\n\nd"}, call.Content[0]}},
		res("c1"), res("c2"), text("assistant", "e"), text("user", "f"),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("MergeSameRole (-want +got):\n%s", d)
	}
	if d := cmp.Diff(orig, in); d != "" {
		t.Fatalf("the input was changed:\n%s", d)
	}
	alt := []sessions.Message{text("user", "a"), text("assistant", "b")}
	if got := MergeSameRole(alt); &got[0] != &alt[0] {
		t.Error("alternating messages are returned as they are")
	}
}
