package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// backlog is a message of a backlog: sent at, begun later (journaled while
// the gateway was down, or queued behind a long turn).
func backlog(title string, at time.Time) sessions.Origin {
	o := origin(title)
	o.At = at
	return o
}

// A session created or rolled over for a message of a backlog is not
// already idle: its idle clock starts when it does, not at the message's
// older time, so the backlog's next message stays in it.
func testResetBacklog(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(60))
	// A new chat: two messages sent three hours ago, begun now one by one.
	k := f.key("new")
	sent := t0.Add(-3 * time.Hour)
	e0, info := f.begin(k, backlog("first", sent))
	if !info.Created {
		t.Fatalf("BeginInfo %+v, want Created", info)
	}
	f.clk.Advance(time.Second)
	f.wantKept("a new chat's second backlog message", k, e0.SessionID)
	f.clk.Advance(10 * time.Minute)
	f.wantKept("the answer's follow-up ten minutes later", k, e0.SessionID)

	// An idle session: two messages sent after its idle time expired,
	// begun hours later. The first rolls it over; the second stays.
	g := f.key("idle")
	g0, _ := f.begin(g, origin("hello"))
	f.clk.Set(f.clk.Now().Add(5 * time.Hour))
	late := f.clk.Now().Add(-3 * time.Hour)
	g1, info := f.begin(g, backlog("after lunch", late))
	if info.ResetReason != sessions.ReasonIdle || info.Previous != g0.SessionID {
		t.Fatalf("first backlog message: BeginInfo %+v, want an idle rollover of %s", info, g0.SessionID)
	}
	if now := f.clk.Now(); g1.LastInteractionAt.Before(now) {
		t.Errorf("rolled-over session's idle clock %v, want not before its start %v", g1.LastInteractionAt, now)
	}
	f.clk.Advance(time.Second)
	if e, info := f.begin(g, backlog("second", late.Add(time.Minute))); e.SessionID != g1.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("second backlog message: session %s %+v, want %s kept", e.SessionID, info, g1.SessionID)
	}
}
