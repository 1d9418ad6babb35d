package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// Markers in a user's text that script the fake model's next answer.
const (
	// MarkTool asks for one call of ToolName (then a text answer quoting
	// the tool's result).
	MarkTool = "#tool"
	// MarkSpawn asks for a call of OpenClaw's sessions_spawn tool.
	MarkSpawn = "#spawn"
)

// Model scripts the fake model's answers. An answer depends only on the
// request (never on how many came before), so OpenClaw's retries, title
// generation and compaction summaries get the same answer on a re-run.
type Model struct {
	// ToolName is the tool MarkTool calls and ToolArgs its arguments.
	ToolName, ToolArgs string
	// SpawnArgs are the arguments of the tool_call call MarkSpawn sends
	// (OpenClaw 2026.9 puts sessions_spawn behind its tool search: the
	// model calls it through tool_call).
	SpawnArgs string
	// Log, if set, receives every request (one JSON line each).
	Log func(line []byte)

	mu    sync.Mutex
	calls int // tool calls answered, for unique ids
}

// Reply is the openaitest.ReplyFunc of m.
func (m *Model) Reply(_ int, r openaitest.Request) openaitest.Reply {
	if m.Log != nil {
		if b, err := json.Marshal(r.Body); err == nil {
			m.Log(b)
		}
	}
	msgs := r.Body.Messages
	if isSummaryRequest(r) {
		return openaitest.Reply{Text: "## Summary\nThe fixture conversation so far: greetings, a tool call and a question."}
	}
	u := turnStart(msgs)
	if u < 0 {
		return openaitest.Reply{Text: "(no user message)"}
	}
	// A tool already answered in this turn: finish it with text (OpenClaw
	// appends its context after a tool result, so the tool message is not
	// necessarily the last one).
	for i := len(msgs) - 1; i > u; i-- {
		if msgs[i].Role == goopenai.ChatMessageRoleTool {
			return openaitest.Reply{Text: "Tool " + toolName(msgs, msgs[i].ToolCallID) + " answered: " + clip(text(msgs[i]), 80)}
		}
	}
	said := spoken(text(msgs[u]))
	switch {
	case strings.Contains(said, "[Subagent Task]"):
		return openaitest.Reply{Text: "Subagent result: one, two, three."}
	case strings.Contains(said, MarkSpawn) && hasTool(r, "tool_call"):
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: m.callID(), Name: "tool_call", Arguments: m.SpawnArgs}}}
	case strings.Contains(said, MarkTool) && hasTool(r, m.ToolName):
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: m.callID(), Name: m.ToolName, Arguments: m.ToolArgs}}}
	}
	return openaitest.Reply{Text: "Echo: " + clip(said, 120)}
}

func (m *Model) callID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return fmt.Sprintf("call_%03d", m.calls)
}

// isSummaryRequest tells a compaction (summarisation) request by its
// instructions.
func isSummaryRequest(r openaitest.Request) bool {
	for _, msg := range r.Body.Messages {
		if msg.Role == goopenai.ChatMessageRoleSystem || msg.Role == goopenai.ChatMessageRoleDeveloper {
			t := strings.ToLower(text(msg))
			if strings.Contains(t, "summar") && len(r.Body.Tools) == 0 {
				return true
			}
		}
	}
	return false
}

func hasTool(r openaitest.Request, name string) bool {
	for _, t := range r.Body.Tools {
		if t.Function != nil && t.Function.Name == name {
			return true
		}
	}
	return false
}

func toolName(msgs []goopenai.ChatCompletionMessage, id string) string {
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Function.Name
			}
		}
	}
	return "?"
}

func text(m goopenai.ChatCompletionMessage) string {
	if m.Content != "" {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.MultiContent {
		b.WriteString(p.Text)
	}
	return b.String()
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// turnStart is the index of the current turn's user message: the last
// user message with something said in it (OpenClaw's internal-context
// messages say nothing), or -1.
func turnStart(msgs []goopenai.ChatCompletionMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == goopenai.ChatMessageRoleUser && spoken(text(msgs[i])) != "" {
			return i
		}
	}
	return -1
}

// spoken is what a user message says without OpenClaw's context: internal
// context blocks, the sender header and the Runtime line.
func spoken(s string) string {
	const begin, end = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
	for {
		i := strings.Index(s, begin)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len(end):]
	}
	var kept []string
	for _, p := range strings.Split(s, "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" || strings.HasPrefix(p, "Runtime:") || strings.Contains(p, "openclaw:ctx") || strings.HasPrefix(p, "```") {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, " ")
}
