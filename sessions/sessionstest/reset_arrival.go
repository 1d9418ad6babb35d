package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// arrived is a message the gateway accepted at at and begins later.
func arrived(title string, at time.Time) sessions.Origin {
	o := origin(title)
	o.At, o.Arrived = at, at
	return o
}

// Begin judges the reset policy when the message arrived: one accepted
// before the daily boundary that waited behind a turn running across it
// stays in its session; one accepted after it rolls the session over.
func testResetAtArrival(t *testing.T, open Opener) {
	f := newFixture(t, open, daily(4, "UTC"))
	k := f.key("g1")
	f.clk.Set(time.Date(2026, 3, 11, 3, 50, 0, 0, time.UTC))
	e0, _ := f.begin(k, origin("hello"))
	// An arrival later than Begin's clock (another replica's clock) is
	// judged at the clock, not after the boundary it has not reached.
	f.clk.Set(time.Date(2026, 3, 11, 3, 58, 0, 0, time.UTC))
	if e, info := f.begin(k, arrived("from the future", time.Date(2026, 3, 11, 4, 30, 0, 0, time.UTC))); e.SessionID != e0.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("arrival after the clock: session %s %+v, want %s kept", e.SessionID, info, e0.SessionID)
	}
	waited := time.Date(2026, 3, 11, 3, 59, 0, 0, time.UTC)
	f.clk.Set(time.Date(2026, 3, 11, 4, 2, 0, 0, time.UTC)) // the turn ahead ran past 04:00
	if e, info := f.begin(k, arrived("before 04:00", waited)); e.SessionID != e0.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("message accepted at 03:59, begun at 04:02: session %s %+v, want %s kept", e.SessionID, info, e0.SessionID)
	}
	f.clk.Advance(time.Minute)
	e1, info := f.begin(k, arrived("after 04:00", f.clk.Now().Add(-time.Second)))
	if info.ResetReason != sessions.ReasonDaily || info.Previous != e0.SessionID ||
		!info.ExpiredAt.Equal(time.Date(2026, 3, 11, 4, 0, 0, 0, time.UTC)) || e1.SessionID == e0.SessionID {
		t.Fatalf("message accepted after 04:00: BeginInfo %+v, want a daily rollover of %s expired at 04:00", info, e0.SessionID)
	}
	if !e1.SessionStartedAt.Equal(f.clk.Now()) {
		t.Errorf("new session started %v, want Begin's clock %v", e1.SessionStartedAt, f.clk.Now())
	}

	// Idle: a message accepted within the idle time keeps the session
	// however long it waited.
	g := newFixture(t, open, idle(10))
	kg := g.key("g2")
	g0, _ := g.begin(kg, origin("hello"))
	acc := g.clk.Now().Add(9 * time.Minute)
	g.clk.Advance(40 * time.Minute)
	if e, info := g.begin(kg, arrived("within ten minutes", acc)); e.SessionID != g0.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("idle: message accepted after 9 minutes, begun after 40: session %s %+v, want %s kept", e.SessionID, info, g0.SessionID)
	}
}
