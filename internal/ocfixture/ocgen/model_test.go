package main

import (
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

func req(tools []string, msgs ...goopenai.ChatCompletionMessage) openaitest.Request {
	var ts []goopenai.Tool
	for _, n := range tools {
		ts = append(ts, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: n}})
	}
	return openaitest.Request{Body: goopenai.ChatCompletionRequest{Messages: msgs, Tools: ts}}
}

func msg(role, text string) goopenai.ChatCompletionMessage {
	return goopenai.ChatCompletionMessage{Role: role, Content: text}
}

// OpenClaw's user turn: a sender header, the text, a Runtime line, then a
// second user message with internal context.
func turn(text string) []goopenai.ChatCompletionMessage {
	return []goopenai.ChatCompletionMessage{
		msg("system", "You are a personal assistant running inside OpenClaw."),
		msg("user", "[Sun 2026-11-29 21:59 UTC] Conversation info: ⟦openclaw:ctx⟧\n```json\n{}\n```\n\n"+text+"\n\nRuntime: agent=main"),
		msg("user", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"),
	}
}

func TestModelEchoesWhatTheUserSaid(t *testing.T) {
	m := &Model{ToolName: "ls", ToolArgs: "{}"}
	got := m.Reply(0, req([]string{"ls"}, turn("hello there")...))
	if got.Text != "Echo: hello there" || len(got.ToolCalls) != 0 {
		t.Errorf("reply %+v, want the text echoed without OpenClaw's context", got)
	}
}

func TestModelToolCallThenAnswer(t *testing.T) {
	m := &Model{ToolName: "ls", ToolArgs: `{"path":"."}`, SpawnArgs: `{"id":"sessions_spawn"}`}
	got := m.Reply(0, req([]string{"ls", "tool_call"}, turn("look "+MarkTool)...))
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "ls" || got.ToolCalls[0].Arguments != `{"path":"."}` {
		t.Fatalf("reply %+v, want one ls call", got)
	}
	msgs := append(turn("look "+MarkTool),
		goopenai.ChatCompletionMessage{Role: "assistant", ToolCalls: []goopenai.ToolCall{{ID: got.ToolCalls[0].ID,
			Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: "ls", Arguments: "{}"}}}},
		goopenai.ChatCompletionMessage{Role: "tool", ToolCallID: got.ToolCalls[0].ID, Content: "AGENTS.md\nSOUL.md"},
		// OpenClaw adds its context after the tool result, quoting the
		// turn's text, marker included (the first generator run looped
		// on ls 180 times on that).
		msg("user", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n\"User: look "+MarkTool+"\"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"))
	after := m.Reply(1, req([]string{"ls"}, msgs...))
	if !strings.HasPrefix(after.Text, "Tool ls answered: AGENTS.md") {
		t.Errorf("after the tool result: %+v, want a text answer quoting it", after)
	}
	// The next turn: the earlier marker is history, not a new request.
	next := append(append(msgs, msg("assistant", after.Text)), turn("and the weather?")...)
	if again := m.Reply(2, req([]string{"ls"}, next...)); again.Text != "Echo: and the weather?" {
		t.Errorf("next turn answered %+v, want an echo (no tool loop)", again)
	}
	spawn := m.Reply(3, req([]string{"tool_call"}, turn("count "+MarkSpawn)...))
	if len(spawn.ToolCalls) != 1 || spawn.ToolCalls[0].Name != "tool_call" || spawn.ToolCalls[0].ID == got.ToolCalls[0].ID {
		t.Errorf("spawn reply %+v, want one tool_call call with a new id", spawn)
	}
}

func TestModelMarkerNeedsTheTool(t *testing.T) {
	m := &Model{ToolName: "ls", ToolArgs: "{}"}
	got := m.Reply(0, req(nil, turn("look "+MarkTool)...))
	if len(got.ToolCalls) != 0 {
		t.Errorf("a request without the ls tool got a tool call: %+v", got)
	}
}

func TestModelSummary(t *testing.T) {
	m := &Model{}
	got := m.Reply(0, req(nil, msg("system", "You are a context summarization assistant."), msg("user", "<conversation>x</conversation>")))
	if !strings.HasPrefix(got.Text, "## Summary") {
		t.Errorf("summary request answered %+v", got)
	}
}
