package agents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestCutShortToolCallNotRun: a tool call in an answer the model's output
// limit cut short (llm.StopLength: OpenAI finish_reason "length",
// Anthropic "max_tokens") may carry incomplete arguments; it is not run.
// Its result tells the model the call was cut short, and the next call
// gets the chance to make it again.
func TestCutShortToolCallNotRun(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			m := assistantCall("c1", "sessions_list", map[string]any{})
			m.Content[len(m.Content)-1].Arguments = json.RawMessage(`"{\"limit\": 1"`) // what the wire kept of the cut JSON
			m.StopReason = llm.StopLength
			return m, nil
		}
		return assistantText("done"), nil
	}
	k := h.key("main", "1")
	var ran []string
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("list")},
		OnTool: func(name string, _ json.RawMessage) { ran = append(ran, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 0 {
		t.Errorf("tools run: %v, want none from a cut-short answer", ran)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist[1:])
	if len(hist) != 4 || hist[2].Role != sessions.RoleToolResult || !hist[2].IsError || !strings.Contains(hist[2].Text(), "cut short") {
		t.Fatalf("transcript = %+v, want the call answered with a cut-short error", hist)
	}
	if res.Text != "done" {
		t.Errorf("reply %q", res.Text)
	}
}
