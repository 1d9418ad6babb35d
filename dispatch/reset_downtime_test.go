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

// A message sent ten minutes after the last one, that the gateway only
// received two hours later (it was down: Telegram's backlog after a
// restart), is answered in the conversation it continues: an idle policy
// of 30 minutes judges the user's pause, not the gateway's downtime.
func TestBacklogAfterDowntimeKeepsIdleSession(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	minutes := 30
	reset := sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &minutes}}
	m := &model{}
	h := newHarness(t, "", m, func(h *harness) {
		h.store = func(o *filestore.Options) { o.Now = now }
		h.reset = reset
		h.disp = func(o *Options) { o.Now = now }
	})
	key, err := routing.Parse("agent:main:tg:direct:71")
	if err != nil {
		t.Fatal(err)
	}
	store, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	first := in("tg", "71", "first")
	first.Time = now()
	h.handle(first)
	h.drained()
	e0, ok, err := store.Get(key)
	if err != nil || !ok {
		t.Fatalf("no session after the first message: %v", err)
	}
	offset.Store(int64(2 * time.Hour)) // the gateway was down
	late := in("tg", "71", "second")
	late.Time = first.Time.Add(10 * time.Minute)
	h.handle(late)
	h.drained()
	reqs := m.requests()
	if len(reqs) != 2 || !slices.Contains(userMessages(reqs[1].Messages), "first") {
		t.Fatalf("%d model calls, the last saw %q: the backlog message lost its conversation", len(reqs), userMessages(reqs[len(reqs)-1].Messages))
	}
	if e, _, _ := store.Get(key); e.SessionID != e0.SessionID {
		t.Fatalf("session %s after the backlog message, want %s kept", e.SessionID, e0.SessionID)
	}
}
