package agents

import (
	"context"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestResultSumsTheTurnsUsage: a turn with a tool call makes two model
// calls; Result.Usage is their sum, priced from the config, and the reply
// reused after a restart reports none (it was counted when it was made).
func TestResultSumsTheTurnsUsage(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.r.prices = Prices{"fake/model-1": {Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 4}}
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			m := assistantCall("c1", "sessions_list", map[string]any{})
			m.Usage = &sessions.Usage{Input: 1000, Output: 100, CacheRead: 3000}
			return m, nil
		}
		m := assistantText("done")
		m.Usage = &sessions.Usage{Input: 500, Output: 50, CacheWrite: 2000}
		return m, nil
	}
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("list")}})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if u.Input != 1500 || u.Output != 150 || u.CacheRead != 3000 || u.CacheWrite != 2000 || u.TotalTokens != 6650 {
		t.Errorf("turn usage %+v, want the two calls' sum", u)
	}
	// (1500×2 + 150×8 + 3000×0.5 + 2000×4) / 1e6 = 13700 µ$.
	want := sessions.Cost{Input: 0.003, Output: 0.0012, CacheRead: 0.0015, CacheWrite: 0.008, Total: 0.0137}
	if !sameCost(u.Cost, want) {
		t.Errorf("turn cost %+v, want %+v", u.Cost, want)
	}
	if res.EntryID == "" || res.Model != "fake/model-1" {
		t.Errorf("entry %q model %q", res.EntryID, res.Model)
	}
	again, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != "done" || again.Usage != (sessions.Usage{}) {
		t.Errorf("reused reply: text %q usage %+v, want the stored answer and no usage", again.Text, again.Usage)
	}
}
