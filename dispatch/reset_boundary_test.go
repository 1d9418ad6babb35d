package dispatch

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// A message that arrived before the daily reset, queued behind a turn
// that ran across it, is answered in the session it arrived in (SPEC
// §3.6: the policy is evaluated when the message arrives); the first
// message that arrives after the boundary starts the new session.
func TestQueuedMessageBehindTurnAcrossDailyReset(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	// The boundary is one to two hours ahead, so the real clock cannot
	// reach it while the test runs; the fake clock jumps past it.
	boundary := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	hour := boundary.Hour()
	reset := sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetDaily, AtHour: &hour, Timezone: "UTC"}}
	m := &model{block: make(chan struct{})}
	h := newHarness(t, "", m, func(h *harness) {
		h.store = func(o *filestore.Options) { o.Now = now }
		h.reset = reset
		h.disp = func(o *Options) { o.Now = now }
	})
	key, err := routing.Parse("agent:main:tg:direct:70")
	if err != nil {
		t.Fatal(err)
	}
	store, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	h.handle(in("tg", "70", "first"))
	eventually(t, "the first turn", func() bool { return len(m.requests()) == 1 })
	e0, ok, err := store.Get(key)
	if err != nil || !ok {
		t.Fatalf("no session after the first message: %v", err)
	}
	h.handle(in("tg", "70", "second")) // accepted before the boundary, queued
	offset.Store(int64(boundary.Sub(time.Now()) + time.Minute))
	close(m.block)
	h.drained()
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if !slices.Contains(userMessages(reqs[1].Messages), "first") {
		t.Errorf("the queued message's turn saw %q: not the session it arrived in", userMessages(reqs[1].Messages))
	}
	if e, _, _ := store.Get(key); e.SessionID != e0.SessionID {
		t.Errorf("session %s after the queued message, want %s kept", e.SessionID, e0.SessionID)
	}

	third := in("tg", "70", "third") // sent and accepted after the boundary
	third.Time = now()
	h.handle(third)
	h.drained()
	reqs = m.requests()
	if len(reqs) != 3 || slices.Contains(userMessages(reqs[2].Messages), "first") {
		t.Fatalf("after the boundary: %d calls, the last saw %q; want a new session", len(reqs), userMessages(reqs[len(reqs)-1].Messages))
	}
	a, err := store.Archived(key)
	if err != nil || len(a) != 1 || a[0].SessionID != e0.SessionID || a[0].Reason != sessions.ReasonDaily {
		t.Fatalf("Archived = %+v, %v; want %s archived by the daily reset", a, err, e0.SessionID)
	}
}

// userMessages are the texts of a request's user messages.
func userMessages(msgs []sessions.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == sessions.RoleUser {
			out = append(out, m.Text())
		}
	}
	return out
}
