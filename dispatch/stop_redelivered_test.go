package dispatch

import (
	"errors"
	"slices"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestStopRedeliveredAfterRestartStopsNothing (SPEC §3.7: duplicate
// deliveries are dropped; nothing accepted is lost): a platform delivers
// a /stop again after a restart (Discord's catch-up reads the history
// after a cursor written at most once a second; Telegram sends a batch
// again when the process died before confirming it). The message sent
// after the /stop, journaled before the crash and resumed at the start,
// is answered: the repeated /stop is a duplicate and stops nothing. It
// cancelled that message's turn, which finished unanswered.
func TestStopRedeliveredAfterRestartStopsNothing(t *testing.T) {
	m := &model{started: make(chan struct{}, 10)}
	h := newHarness(t, "", m)
	stop := in("tg", "76", "/stop")
	h.handle(stop)
	h.drained()
	acceptOnly(t, h, in("tg", "76", "after the stop")) // journaled, then the process died
	h.close()
	blk := make(chan struct{})
	m.mu.Lock()
	m.block = blk
	m.mu.Unlock()
	h.start()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v; want the message after /stop", n, err)
	}
	<-m.started // its turn runs
	if err := h.d.Handle(h.ctx, stop); !errors.Is(err, channels.ErrDuplicate) {
		t.Errorf("the /stop delivered again: Handle = %v, want a duplicate", err)
	}
	m.mu.Lock()
	m.block = nil
	m.mu.Unlock()
	close(blk)
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"Stopped. 0 queued message(s) dropped.", "re: after the stop"}) {
		t.Errorf("sent %q, want /stop's one answer and the later message's", got)
	}
}
