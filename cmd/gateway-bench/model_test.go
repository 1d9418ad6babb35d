package main

import (
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// TestBenchReplyCallsToolsFirst: with -tools 2 a turn's first two model
// calls answer with a sessions_list call each, the third with the text; a
// later turn (a new user message) starts over.
func TestBenchReplyCallsToolsFirst(t *testing.T) {
	reply := benchReply(0, 2)
	user := func(text string) goopenai.ChatCompletionMessage {
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: text}
	}
	call := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant,
		ToolCalls: []goopenai.ToolCall{{ID: "c", Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: benchTool}}}}
	result := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: "c", Content: "[]"}
	tests := []struct {
		name     string
		msgs     []goopenai.ChatCompletionMessage
		tool     bool
		wantText string
	}{
		{"first call", []goopenai.ChatCompletionMessage{user("m1")}, true, ""},
		{"after one tool", []goopenai.ChatCompletionMessage{user("m1"), call, result}, true, ""},
		{"after two tools", []goopenai.ChatCompletionMessage{user("m1"), call, result, call, result}, false, "ack m1"},
		{"next turn", []goopenai.ChatCompletionMessage{user("m1"), call, result, call, result,
			{Role: goopenai.ChatMessageRoleAssistant, Content: "ack m1"}, user("m2")}, true, ""},
	}
	for _, tt := range tests {
		got := reply(0, openaitest.Request{Body: goopenai.ChatCompletionRequest{Messages: tt.msgs}})
		if tool := len(got.ToolCalls) == 1 && got.ToolCalls[0].Name == benchTool; tool != tt.tool || got.Text != tt.wantText {
			t.Errorf("%s: tool call %v, text %q; want tool call %v, text %q", tt.name, tool, got.Text, tt.tool, tt.wantText)
		}
	}
	if got := benchReply(0, 0)(0, openaitest.Request{Body: goopenai.ChatCompletionRequest{
		Messages: []goopenai.ChatCompletionMessage{user("m1")}}}); len(got.ToolCalls) != 0 || got.Text != "ack m1" {
		t.Errorf("-tools 0: %+v, want the answer at once", got)
	}
}
