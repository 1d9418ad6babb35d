package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestReplayedNewWithMessageResetsOnce (SPEC §3.6, §3.7): "/new hello"
// resets the session and runs "hello" as the new session's first
// message. When the daemon stops while that turn runs, the record is
// replayed at the next start: it must not reset a second time (that
// archived the session holding "hello" and left a stray empty-looking
// session in /sessions), and "hello" is answered once, in the session
// the first reset started.
func TestReplayedNewWithMessageResetsOnce(t *testing.T) {
	m := &model{started: make(chan struct{}, 10)}
	h := newHarness(t, "", m)
	h.grace = 50 * time.Millisecond
	key, err := routing.Parse("agent:main:tg:direct:71")
	if err != nil {
		t.Fatal(err)
	}
	h.handle(in("tg", "71", "before"))
	<-m.started
	h.drained()
	store, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	e0, _, _ := store.Get(key)

	m.mu.Lock()
	m.block = make(chan struct{}) // the new session's first turn never ends before the stop
	m.mu.Unlock()
	h.handle(in("tg", "71", "/new hello"))
	<-m.started
	e1, _, _ := store.Get(key)
	if e1.SessionID == e0.SessionID {
		t.Fatal("/new did not reset before its turn ran")
	}
	h.close()
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()

	h.start()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	store, err = h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	e2, _, _ := store.Get(key)
	if e2.SessionID != e1.SessionID {
		t.Errorf("the replayed /new reset again: session %s, want %s (the one the first reset started)", e2.SessionID, e1.SessionID)
	}
	a, err := store.Archived(key)
	if err != nil || len(a) != 1 || a[0].SessionID != e0.SessionID {
		t.Errorf("Archived = %+v, %v; want only %s (the session before /new)", a, err, e0.SessionID)
	}
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: before", "re: hello"}) {
		t.Errorf("sent %q, want the first answer and hello's", got)
	}
	hist := h.history(key.String())
	if countRole(hist, sessions.RoleUser) != 1 || countRole(hist, sessions.RoleAssistant) != 1 {
		t.Errorf("the new session holds %+v, want hello and its answer once", hist)
	}
}

// TestReplayedNewAfterItsResetDoesNotResetAgain: the process died after
// /new reset the session but before its answer was stored. The replay
// answers /new without a second reset: the session in force started
// after the command, so the chat already has what it asked for.
func TestReplayedNewAfterItsResetDoesNotResetAgain(t *testing.T) {
	h := newHarness(t, "", nil)
	key, err := routing.Parse("agent:main:tg:direct:72")
	if err != nil {
		t.Fatal(err)
	}
	h.handle(in("tg", "72", "before"))
	h.drained()
	store, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	e0, _, _ := store.Get(key)
	acceptOnly(t, h, in("tg", "72", "/new"))
	// The reset the dead process did before it could answer.
	e1, err := store.Reset(h.ctx, key, sessions.ResetOptions{Manual: true, Reason: "new"})
	if err != nil {
		t.Fatal(err)
	}
	h.restart()
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	store, err = h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	if e, _, _ := store.Get(key); e.SessionID != e1.SessionID {
		t.Errorf("the replayed /new reset again: session %s, want %s", e.SessionID, e1.SessionID)
	}
	if a, err := store.Archived(key); err != nil || len(a) != 1 || a[0].SessionID != e0.SessionID {
		t.Errorf("Archived = %+v, %v; want only %s", a, err, e0.SessionID)
	}
	if got := h.tg.texts(); !slices.Equal(got, []string{"re: before", "Started a new session."}) {
		t.Errorf("sent %q", got)
	}
}

// TestStopDuringNewWithMessageFinishesIt: /stop while the first turn of
// "/new hello" runs ends it as it ends any turn: the record is finished
// (not left for the next start, where it would run once more), and the
// chat hears that it stopped.
func TestStopDuringNewWithMessageFinishesIt(t *testing.T) {
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m)
	h.handle(in("tg", "74", "/new hello"))
	<-m.started
	h.handle(in("tg", "74", "/stop"))
	h.drained()
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 0 {
		t.Errorf("Resume = %d, %v; want nothing left to run", n, err)
	}
	if got := h.tg.texts(); !slices.Contains(got, "Stopped. 0 queued message(s) dropped.") {
		t.Errorf("sent %q, want /stop's answer", got)
	}
}
