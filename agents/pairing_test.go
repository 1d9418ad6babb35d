package agents

import (
	"context"
	"fmt"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// unpairedCalls returns what both wires refuse in msgs: a tool call not
// answered by a tool result before the next user or assistant message, or
// a tool result answering no call of the assistant message before it.
func unpairedCalls(msgs []sessions.Message) error {
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case sessions.RoleToolResult:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %q answers no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d (%s): calls %v were never answered", i, m.Role, open)
		}
		for _, c := range m.Content {
			if c.Type == sessions.BlockToolCall {
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("calls %v were never answered", open)
	}
	return nil
}

// TestUnansweredToolCallDoesNotBreakTheSession: a turn stopped (or the
// daemon killed) after the model's tool call was stored but before its
// result was leaves a call with no result in the transcript. Both wires
// refuse such a history (OpenAI: "an assistant message with 'tool_calls'
// must be followed by tool messages"; Anthropic: "tool_use ids were found
// without tool_result blocks") with a 400, the request's fault: every
// later turn of the session failed until /new. The request answers the
// call with an error result instead; the transcript is not changed.
func TestUnansweredToolCallDoesNotBreakTheSession(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	call := assistantCall("c1", "sessions_list", map[string]any{})
	call.Content = append(call.Content, assistantCall("c2", "sessions_list", map[string]any{}).Content...)
	tr := h.transcript("main", k)
	if _, err := tr.Append(context.Background(), user("list them"), call,
		sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "c1", ToolName: "sessions_list",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "[]"}}}); err != nil {
		t.Fatal(err)
	}
	// Stopped here: c2 has no result. A restart resumes the turn (Reuse),
	// and the member writes again.
	for _, turn := range []Turn{{AgentID: "main", Key: k, Reuse: true}, {AgentID: "main", Key: k, Inputs: []sessions.Message{user("hello?")}}} {
		if _, err := h.r.Run(context.Background(), turn); err != nil {
			t.Fatal(err)
		}
		reqs := h.p.requests()
		if err := unpairedCalls(reqs[len(reqs)-1].Messages); err != nil {
			t.Fatalf("the request would be refused: %v", err)
		}
	}
	hist, _ := tr.History(context.Background())
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult && m.ToolCallID == "c2" {
			t.Fatalf("the transcript was changed: %+v", m)
		}
	}
}

// TestPairToolResultsLeavesPairedHistoryAlone pins that a history whose
// calls are all answered is returned as it is (no copy).
func TestPairToolResultsLeavesPairedHistoryAlone(t *testing.T) {
	msgs := []sessions.Message{user("q"), assistantCall("c1", "x", nil),
		{Role: sessions.RoleToolResult, ToolCallID: "c1"}, assistantText("a"), user("q2")}
	got := llm.PairToolResults(msgs)
	if &got[0] != &msgs[0] || len(got) != len(msgs) {
		t.Fatal("a paired history was copied")
	}
}
