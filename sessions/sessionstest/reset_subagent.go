package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// A subagent's session lives for its task: no timed reset rolls it over,
// so a child spawned before the daily boundary (or idle longer than the
// idle time, queued behind the subagent cap) runs its task in the session
// it was spawned into, with the model and thinking level it was given.
func testResetSubagent(t *testing.T, open Opener) {
	n := 10
	f := newFixture(t, open, sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetDaily,
		AtHour: intp(4), IdleMinutes: &n, Timezone: "UTC"}})
	child, err := routing.SubagentKey(f.idx.AgentID(), "run1")
	if err != nil {
		t.Fatal(err)
	}
	parent := f.key("g1").String()
	f.clk.Set(time.Date(2026, 3, 11, 3, 59, 0, 0, time.UTC))
	c0, _ := f.begin(child, sessions.Origin{ParentKey: parent, Title: "research", At: f.clk.Now()})
	if _, err := f.idx.Patch(f.ctx, child, func(e *sessions.Entry) error {
		e.SpawnedBy, e.ParentSessionKey, e.ModelOverride, e.ThinkingLevel = parent, parent, "small", "high"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(time.Date(2026, 3, 11, 4, 30, 0, 0, time.UTC)) // past 04:00 and idle 31 minutes
	e, info := f.begin(child, sessions.Origin{Internal: true})
	if e.SessionID != c0.SessionID || info != (sessions.BeginInfo{}) || e.ModelOverride != "small" || e.ThinkingLevel != "high" {
		t.Fatalf("the child's run: session %s %+v model %q thinking %q; want %s kept with its model and thinking",
			e.SessionID, info, e.ModelOverride, e.ThinkingLevel, c0.SessionID)
	}
}

func intp(v int) *int { return &v }
