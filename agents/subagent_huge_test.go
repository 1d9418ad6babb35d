package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestHugeChildResultFitsParentWindow (SPEC §5): a child whose reply is
// larger than its parent's context window (a long report from a model
// with a larger window, or a long output) has its result announced cut
// to a share of the parent's window, marked as cut: whole, the
// announcement was the parent's last user message, which no compaction
// leaves out, and the parent's turn failed "too long even after
// compacting" — the result never reached the chat.
func TestHugeChildResultFitsParentWindow(t *testing.T) {
	const window = 32000
	h := newHarness(t, Defaults{ContextWindow: window}, []Agent{{ID: "main"}}, queueDispatch)
	huge := "BEGIN " + strings.Repeat("finding ", 40000) + " END" // ≈ 320 KB, ≈ 96k tokens
	inner := scripted(map[string]any{"task": "write the report"})
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if llm.EstimateRequest(req) > window {
			return sessions.Message{}, fmt.Errorf("provider: 400 prompt is too long: %w", llm.ErrContextOverflow)
		}
		if strings.Contains(req.System, "You are a subagent") {
			return assistantText(huge), nil
		}
		return inner(n, req)
	}
	parent := h.key("main", "7")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("delegate")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.dispatches()[0].Key, Inputs: []sessions.Message{h.dispatches()[0].Message}}); err != nil {
		t.Fatal(err)
	}
	ds := h.dispatches()
	if len(ds) != 2 {
		t.Fatalf("%d dispatches, want the announcement", len(ds))
	}
	ann := ds[1]
	text := ann.Message.Text()
	if !strings.Contains(text, "BEGIN finding") || !strings.Contains(text, "were cut") {
		t.Fatalf("announcement (%d bytes) lacks the result's start or the cut note", len(text))
	}
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: ann.Key, Inputs: []sessions.Message{ann.Message}})
	if err != nil {
		t.Fatalf("the parent could not take its child's result: %v", err)
	}
	if !strings.HasPrefix(res.Text, "announced: [subagent result]") {
		t.Fatalf("parent answer = %q", res.Text)
	}
}

// TestEmptyChildResultIsAnnounced (SPEC §5): a child whose final reply is
// empty (or blank) still reports: the parent hears "(no reply)", never
// an empty result or none.
func TestEmptyChildResultIsAnnounced(t *testing.T) {
	for _, reply := range []string{"", " \n\t "} {
		h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, queueDispatch)
		inner := scripted(map[string]any{"task": "say nothing"})
		h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
			if strings.Contains(req.System, "You are a subagent") {
				return assistantText(reply), nil
			}
			return inner(n, req)
		}
		parent := h.key("main", "7")
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: parent, Inputs: []sessions.Message{user("delegate")}}); err != nil {
			t.Fatal(err)
		}
		d := h.dispatches()[0]
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: d.Key, Inputs: []sessions.Message{d.Message}}); err != nil {
			t.Fatalf("reply %q: %v", reply, err)
		}
		ds := h.dispatches()
		if len(ds) != 2 || ds[1].Key != parent || !strings.Contains(ds[1].Message.Text(), "status: done") ||
			!strings.Contains(ds[1].Message.Text(), "\n(no reply)\n") {
			t.Fatalf("reply %q: announcement = %+v", reply, ds)
		}
	}
}
