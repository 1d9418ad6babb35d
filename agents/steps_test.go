package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestTurnReportsSteps: OnStep hears each model call (numbered), each tool
// call by name and a compaction before the model call that needed it.
func TestTurnReportsSteps(t *testing.T) {
	h := newHarness(t, Defaults{ContextWindow: 20000, Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 2000}, MaxHistoryShare: 1},
		[]Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if req.Messages[len(req.Messages)-1].Role == sessions.RoleUser {
			return assistantCall(fmt.Sprintf("call-%d", n), "sessions_list", map[string]any{"limit": 3}), nil
		}
		return assistantText("done"), nil
	}
	k := h.key("main", "1")
	var got []string
	turn := func(text string) {
		got = nil
		if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(text)},
			OnStep: func(s Step) { got = append(got, fmt.Sprintf("%s%d%s", s.Kind, s.Iteration, s.Tool)) }}); err != nil {
			t.Fatal(err)
		}
	}
	turn("first")
	if want := []string{"model1", "tool0sessions_list", "model2"}; !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	turn(strings.Repeat("q", 70000)) // past window - reserve: compacted first
	if len(got) == 0 || got[0] != "compaction0" || !slices.Contains(got, "model1") {
		t.Fatalf("steps %v, want a compaction before the model call", got)
	}
}
