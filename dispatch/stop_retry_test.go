package dispatch

import (
	"slices"
	"testing"
	"time"
)

// TestStopDropsFailedTurnAwaitingRetry (SPEC §6.1 /stop): a turn that
// failed (not the model: the store, the transcript) waits for its backoff
// before it runs again; /stop in its chat cancels that work too, as it
// does what is queued: the message is finished, and no answer comes
// after the chat was told it was stopped.
func TestStopDropsFailedTurnAwaitingRetry(t *testing.T) {
	defer func(b []time.Duration) { failureBackoff = b }(failureBackoff)
	failureBackoff = []time.Duration{time.Hour} // never fires within the test
	h := newHarness(t, "", nil)
	w := acceptOnly(t, h, in("tg", "95", "hello"))
	h.d.fails.failed(h.ctx, []*work{w}, h.d.log, errBoom)
	h.handle(in("tg", "95", "/stop"))
	h.drained() // on main the record stays pending for a retry /stop left be
	if got := h.tg.texts(); !slices.Equal(got, []string{"Stopped. 1 queued message(s) dropped."}) {
		t.Errorf("chat got %q, want the stop's answer counting the failed message", got)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls after /stop, want 0", n)
	}
}
