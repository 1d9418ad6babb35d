package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/routing"
)

// TestQueueDebounceOutOfRangeIsRefused (SPEC §6.1): /queue is open to
// every member of a group, so its quiet window is bounded: debounce:30h
// (or a typo such as 10m for 10s) held every message sent while a reply
// ran for that long, the bot silent to the whole room. A window under a
// millisecond (debounce:0, 500us) was answered "Queue set" and silently
// not stored. Both are refused with a reply naming the key and the range,
// and nothing changes.
func TestQueueDebounceOutOfRangeIsRefused(t *testing.T) {
	h := newHarness(t, "", nil)
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "53"}
	h.handle(in("tg", "53", "/queue collect debounce:2s"))
	h.drained()
	for _, arg := range []string{"debounce:30h", "debounce:61s", "debounce:0", "debounce:0s", "debounce:500us", "steer debounce:2h"} {
		before := len(h.tg.texts())
		h.handle(in("tg", "53", "/queue "+arg))
		h.drained()
		got := h.tg.texts()[before:]
		if len(got) != 1 || !strings.HasPrefix(got[0], "debounce:") || !strings.Contains(got[0], "1m") {
			t.Errorf("/queue %s answered %q, want a refusal naming debounce and its range", arg, got)
		}
		st, err := h.mgr.Store("main")
		if err != nil {
			t.Fatal(err)
		}
		e, _, _ := st.Get(key)
		if e.QueueMode != "collect" || e.QueueDebounceMs != 2000 {
			t.Errorf("after /queue %s: mode %q debounce %d ms, want collect and 2000 kept", arg, e.QueueMode, e.QueueDebounceMs)
		}
	}
	h.handle(in("tg", "53", "/queue debounce:1m"))
	h.drained()
	st, _ := h.mgr.Store("main")
	if e, _, _ := st.Get(key); e.QueueDebounceMs != 60000 {
		t.Errorf("/queue debounce:1m stored %d ms, want 60000", e.QueueDebounceMs)
	}
}
