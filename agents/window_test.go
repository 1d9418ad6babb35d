package agents

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestContextWindowPerModel: providers.<p>.models.<m>.contextWindow is
// the window of a session on that model (its override, /model), for
// /status, the compaction threshold and the context guard; an agent's
// smaller contextWindow caps it; a model without one has the agent's.
func TestContextWindowPerModel(t *testing.T) {
	h := newHarness(t, Defaults{ContextWindow: 100000, Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 1}, MaxHistoryShare: 1},
		[]Agent{{ID: "main"}, {ID: "capped", ContextWindow: 60000}}, nil)
	h.r.windows = ContextWindows{"fake/big": 400000, "fake/small": 20000, "fake/tiny": 8000}
	on := func(model string) sessions.Entry { return sessions.Entry{ModelOverride: model} }
	for _, c := range []struct {
		agent, model string
		want         int64
	}{
		{"main", "", 100000}, // the default model has no window of its own
		{"main", "fake/big", 400000},
		{"main", "fake/small", 20000},
		{"capped", "", 60000},
		{"capped", "fake/big", 60000}, // the agent's own limit caps the model's
		{"capped", "fake/small", 20000},
	} {
		if got := h.r.ContextWindow(c.agent, on(c.model)); got != c.want {
			t.Errorf("ContextWindow(%s, %q) = %d, want %d", c.agent, c.model, got, c.want)
		}
	}

	// The compaction threshold: ~6000 tokens a turn passes 20000 − 4000
	// on fake/small within a few turns, never 100000 on the default model.
	ctx := context.Background()
	long := strings.Repeat("word ", 4800)
	run := func(peer, model string) int {
		k := h.key("main", peer)
		if model != "" {
			if _, err := h.stores["main"].Patch(ctx, k, func(e *sessions.Entry) error { e.ModelOverride = model; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			if _, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(long)}}); err != nil {
				t.Fatal(err)
			}
		}
		return h.transcript("main", k).compactions()
	}
	if n := run("default", ""); n != 0 {
		t.Errorf("%d compactions on the default model's 100000 window, want 0", n)
	}
	if n := run("small", "fake/small"); n == 0 {
		t.Error("no compaction on fake/small's 20000 window")
	}
	for _, req := range h.p.requests() {
		if req.Model == "small" && llm.EstimateRequest(req) >= 20000 {
			t.Fatalf("a request to fake/small holds %d tokens, window 20000", llm.EstimateRequest(req))
		}
	}

	// The context guard: fake/tiny's 8000 is refused, naming the minimum.
	k := h.key("main", "tiny")
	h.stores["main"].Patch(ctx, k, func(e *sessions.Entry) error { e.ModelOverride = "fake/tiny"; return nil })
	_, err := h.r.Run(ctx, Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("x")}})
	var ue *UserError
	if !errors.As(err, &ue) || !strings.Contains(ue.UserMessage(), "16000") || !strings.Contains(ue.UserMessage(), "fake/tiny") {
		t.Fatalf("err = %v, want a refusal naming fake/tiny and the minimum", err)
	}
}
