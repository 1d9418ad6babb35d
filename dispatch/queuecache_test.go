package dispatch

import (
	"context"
	"testing"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The cache serves what was noted last until it is forgotten.
func TestQueueCache(t *testing.T) {
	var c queueCache
	k := routing.Key{Agent: "main", Main: "main"}
	if _, ok, _ := c.get(k); ok {
		t.Fatal("an empty cache has settings")
	}
	c.note(k, sessions.Entry{QueueMode: "steer", QueueDebounceMs: 1500, QueueCap: 3, QueueDrop: "old"})
	got, ok, _ := c.get(k)
	if want := (sessionQueue{Mode: "steer", Debounce: 1500e6, Cap: 3, Drop: "old"}); !ok || got != want {
		t.Errorf("get = %+v, %v; want %+v", got, ok, want)
	}
	c.note(k, sessions.Entry{}) // the entry's own settings were cleared
	if got, ok, _ := c.get(k); !ok || got != (sessionQueue{}) {
		t.Errorf("after a note of none: %+v, %v", got, ok)
	}
	c.forget(k)
	_, ok, mark := c.get(k)
	if ok {
		t.Error("forgotten settings are still served")
	}
	// A read that began before a forget may hold the settings it dropped:
	// it is not kept.
	c.forget(k)
	c.noteRead(k, sessions.Entry{QueueMode: "collect"}, mark)
	if got, ok, _ := c.get(k); ok {
		t.Errorf("a read from before a forget was kept: %+v", got)
	}
	_, _, mark = c.get(k)
	c.noteRead(k, sessions.Entry{QueueMode: "collect"}, mark)
	if got, ok, _ := c.get(k); !ok || got.Mode != "collect" {
		t.Errorf("a read after the last forget: %+v, %v", got, ok)
	}
}

// An operator's change of a session's queue mode through Serialise (the
// API's patch) applies to the session's next message, not 30 s later.
func TestPatchedQueueModeAppliesAtNextMessage(t *testing.T) {
	h := newHarness(t, "", nil)
	h.handle(in("tg", "7", "hello"))
	h.drained()
	k, err := routing.Parse("agent:main:tg:direct:7")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.d.laneSettings(k).Mode; got != lanes.Followup {
		t.Fatalf("mode before the patch %q, want followup", got)
	}
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	err = h.d.Serialise(h.ctx, k, func(ctx context.Context) error {
		_, err := st.Patch(ctx, k, func(e *sessions.Entry) error { e.QueueMode = "interrupt"; return nil })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.d.laneSettings(k).Mode; got != lanes.Interrupt {
		t.Errorf("mode after the patch %q, want interrupt", got)
	}
}
