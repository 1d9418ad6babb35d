package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions"
)

// TestDeliverJobObeysLimits (issue 24: budgets and rate limits apply to
// scheduled runs): an occurrence is checked like a member's message. Its
// turn is charged to the room's budget and to the setter's; an
// occurrence past the room's rate, or past a spent budget, is refused
// with ErrJobThrottled (the scheduler then notes the job refused) before
// the model runs.
func TestDeliverJobObeysLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		room limits.Scope
	}{
		{"room rate", limits.Scope{Rate: "1/min", Daily: limits.Budget{Tokens: 1000}}},
		{"room budget", limits.Scope{Daily: limits.Budget{Tokens: 2}}}, // the fake model uses 2 tokens a turn
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := limits.Default()
			cfg.TurnEstimate = limits.Budget{Tokens: 1}
			cfg.Defaults.Room = tc.room
			cfg.Defaults.Sender = limits.Scope{Daily: limits.Budget{Tokens: 1000}}
			clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
			var lim *limits.Limiter
			h := newHarness(t, "", nil, withLimits(t, cfg, clk, &lim))
			now := time.Now()
			deliver := func(text string) error {
				j, err := jobs.NewJob(jobs.Spec{AgentID: "main", SessionKey: "agent:main:tg:group:-100", Text: text,
					Schedule: sessions.JobSchedule{At: now.Add(time.Hour)},
					Target:   sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: "2", SenderName: "Ann"}}, now)
				if err != nil {
					t.Fatal(err)
				}
				return h.d.DeliverJob(h.ctx, j, j.NextAt, jobs.OccurrenceID(j.ID, j.NextAt))
			}
			if err := deliver("first job"); err != nil {
				t.Fatalf("first occurrence: %v", err)
			}
			h.drained()
			if err := deliver("second job"); !errors.Is(err, ErrJobThrottled) {
				t.Fatalf("second occurrence past the room's %s: %v, want ErrJobThrottled", tc.name, err)
			}
			h.drained()
			if !modelSaw(h.m, "first job") || modelSaw(h.m, "second job") {
				t.Errorf("the model saw the first %v and the refused second %v; want the first only",
					modelSaw(h.m, "first job"), modelSaw(h.m, "second job"))
			}
			if err := lim.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			day := clk.now().Truncate(24 * time.Hour).Unix()
			keys := []sessions.LimitKey{
				{Scope: limits.ScopeRoom, Subject: "main/tg:-100", Period: "day", Start: day},
				{Scope: limits.ScopeSender, Subject: "main/tg:2", Period: "day", Start: day},
			}
			got, err := h.mgr.Backend().Limits().LimitUsage(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if got[k].Tokens != 2 {
					t.Errorf("%s budget charged %d tokens for the scheduled turn, want 2", k.Scope, got[k].Tokens)
				}
			}
		})
	}
}
