package sessionstest

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// downtime is a message sent at sent that the gateway only accepted at
// accepted (it was down, or the platform redelivered it later): Telegram's
// backlog after a restart, Discord's replay.
func downtime(title string, sent, accepted time.Time) sessions.Origin {
	o := origin(title)
	o.At, o.Arrived = sent, accepted
	return o
}

// Begin judges the reset policy when the message was sent, when the
// platform says so, not when a gateway that was down received it: a user
// who wrote ten minutes after their last message keeps their conversation
// whether or not the gateway was up to receive it then. A message sent
// after the policy expired still rolls the session over.
func testResetDowntime(t *testing.T, open Opener) {
	f := newFixture(t, open, idle(30))
	k := f.key("idle")
	e0, _ := f.begin(k, origin("hello")) // t0
	f.clk.Set(t0.Add(2 * time.Hour))     // the gateway was down in between
	if e, info := f.begin(k, downtime("ten minutes later", t0.Add(10*time.Minute), f.clk.Now())); e.SessionID != e0.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("idle: message sent 10 minutes after the last, received 2 hours after it: session %s %+v, want %s kept", e.SessionID, info, e0.SessionID)
	}
	f.clk.Advance(time.Second)
	e1, info := f.begin(k, downtime("an hour after that", t0.Add(70*time.Minute), f.clk.Now()))
	if info.ResetReason != sessions.ReasonIdle || info.Previous != e0.SessionID || e1.SessionID == e0.SessionID ||
		!info.ExpiredAt.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("idle: message sent an hour after the last: BeginInfo %+v, want an idle rollover of %s expired at %v", info, e0.SessionID, t0.Add(40*time.Minute))
	}

	g := newFixture(t, open, daily(4, "UTC"))
	kd := g.key("daily")
	g.clk.Set(time.Date(2026, 3, 11, 3, 50, 0, 0, time.UTC))
	d0, _ := g.begin(kd, origin("hello"))
	g.clk.Set(time.Date(2026, 3, 11, 4, 30, 0, 0, time.UTC))
	if e, info := g.begin(kd, downtime("before 04:00", time.Date(2026, 3, 11, 3, 55, 0, 0, time.UTC), g.clk.Now())); e.SessionID != d0.SessionID || info != (sessions.BeginInfo{}) {
		t.Fatalf("daily: message sent at 03:55, received at 04:30: session %s %+v, want %s kept", e.SessionID, info, d0.SessionID)
	}
	g.clk.Advance(time.Second)
	d1, info := g.begin(kd, downtime("after 04:00", time.Date(2026, 3, 11, 4, 1, 0, 0, time.UTC), g.clk.Now()))
	if info.ResetReason != sessions.ReasonDaily || info.Previous != d0.SessionID || d1.SessionID == d0.SessionID {
		t.Fatalf("daily: message sent at 04:01: BeginInfo %+v, want a daily rollover of %s", info, d0.SessionID)
	}
}
