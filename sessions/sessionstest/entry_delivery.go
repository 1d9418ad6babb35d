package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// testDeliveryContext: the delivery context (seed 002: where the
// session's latest reply went) is stored, read back by another handle as
// another process would, kept through a touch, a counter flush and a reset
// of either kind (it describes the chat, as the last* fields do), and
// replaced or cleared by a Patch. Text a chat chose (a thread name, a chat
// id with odd characters) is stored as given.
func testDeliveryContext(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(10))
	k := f.key("g1")
	f.begin(k, origin("hello"))
	if e := f.get(k); e.DeliveryContext != (sessions.DeliveryContext{}) {
		t.Fatalf("new session's delivery context = %+v, want none", e.DeliveryContext)
	}
	set := sessions.DeliveryContext{Channel: "telegram", To: "-100123", AccountID: "bot1", ThreadID: "42"}
	got, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.DeliveryContext = set; return nil })
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	check := func(what string, e sessions.Entry, want sessions.DeliveryContext) {
		t.Helper()
		if e.DeliveryContext != want {
			t.Errorf("%s: delivery context = %+v, want %+v", what, e.DeliveryContext, want)
		}
	}
	check("after Patch", got, set)
	f.clk.Advance(time.Minute)
	f.begin(k, origin("again"))
	f.idx.AddCounters(k, sessions.Counters{InputTokens: 3, TotalTokens: 3, Messages: 1})
	f.flush()
	check("another handle, after a touch and counters", get(t, f.reopen(), k), set)

	e, err := f.idx.Reset(f.ctx, k, sessions.ResetOptions{Manual: true})
	if err != nil {
		t.Fatalf("manual Reset: %v", err)
	}
	check("manual reset", e, set)
	f.clk.Advance(11 * time.Minute)
	e, _ = f.begin(k, origin("later"))
	check("timed rollover", e, set)
	f.same("timed rollover", e)

	odd := sessions.DeliveryContext{Channel: "discord", To: `a"b\<c>&é`, ThreadID: "\u2028t"}
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.DeliveryContext = odd; return nil }); err != nil {
		t.Fatalf("Patch odd text: %v", err)
	}
	check("odd text, another handle", get(t, f.reopen(), k), odd)
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.DeliveryContext = sessions.DeliveryContext{}; return nil }); err != nil {
		t.Fatalf("Patch clearing: %v", err)
	}
	check("cleared, another handle", get(t, f.reopen(), k), sessions.DeliveryContext{})
}

// testSubagentSpawnOptions: a subagent's spawn options (cleanup,
// runTimeoutSeconds) and its run's start are stored with the child's
// entry, so a restarted daemon still deletes the child and times its run
// out; another handle reads them back, and a Patch clears the start.
func testSubagentSpawnOptions(t *testing.T, open Opener) {
	f := newFixture(t, open, sessions.ResetConfig{})
	k, err := routing.SubagentKey(f.idx.AgentID(), "0b7e9a2c-4d1f-4a8e-9c3b-5e6f7a8b9c0d")
	if err != nil {
		t.Fatal(err)
	}
	parent := f.key("p1").String()
	f.begin(k, sessions.Origin{ParentKey: parent, Title: "task", At: f.clk.Now()})
	start := f.clk.Now().UnixMilli()
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error {
		e.SubagentCleanup, e.RunTimeoutSeconds, e.RunStartedAt = sessions.CleanupDelete, 90, start
		return nil
	}); err != nil {
		t.Fatalf("Patch: %v", err)
	}
	e := get(t, f.reopen(), k)
	if e.SubagentCleanup != sessions.CleanupDelete || e.RunTimeoutSeconds != 90 || e.RunStartedAt != start || e.SpawnedBy != parent {
		t.Errorf("another handle: cleanup %q, timeout %d, started %d, spawned by %q; want delete, 90, %d, %s",
			e.SubagentCleanup, e.RunTimeoutSeconds, e.RunStartedAt, e.SpawnedBy, start, parent)
	}
	if _, err := f.idx.Patch(f.ctx, k, func(e *sessions.Entry) error { e.RunStartedAt = 0; return nil }); err != nil {
		t.Fatalf("Patch clearing the start: %v", err)
	}
	e = get(t, f.reopen(), k)
	if e.SubagentCleanup != sessions.CleanupDelete || e.RunTimeoutSeconds != 90 || e.RunStartedAt != 0 {
		t.Errorf("after the run: cleanup %q, timeout %d, started %d; want delete, 90, 0", e.SubagentCleanup, e.RunTimeoutSeconds, e.RunStartedAt)
	}
}
