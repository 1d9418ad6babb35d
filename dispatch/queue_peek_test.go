package dispatch

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// peekJournal answers each accept's QueuePeek with settings of its own, as
// pgstore's accept answers it from the row its statement reads.
type peekJournal struct {
	sessions.Delivery
	set    sessions.Entry // the settings it answers
	wanted atomic.Int64   // records whose settings were wanted
}

func (j *peekJournal) Accept(ctx context.Context, rec sessions.Record) (bool, error) {
	dup, err := j.Delivery.Accept(ctx, rec)
	if p := sessions.QueuePeekFrom(ctx); err == nil && p != nil && p.Want(rec.ID) {
		j.wanted.Add(1)
		p.Got(rec.ID, j.set, true)
	}
	return dup, err
}

type peekBackend struct {
	*countingGets
	j *peekJournal
}

func (b peekBackend) Journal() sessions.Delivery { return b.j }

// TestQueueSettingsReadWithTheAccept (issue 21): a message whose session's
// queue settings are not cached asks its accept for them
// (sessions.QueuePeek); the lanes then queue it by what the accept read,
// with no read of the session's entry of their own (on PostgreSQL a round
// trip a message for a quiet chat, and a session's first message on each
// replica). The next message, its settings cached, asks for nothing.
func TestQueueSettingsReadWithTheAccept(t *testing.T) {
	counting := &countingGets{}
	j := &peekJournal{set: sessions.Entry{QueueMode: string(lanes.Collect), QueueDebounceMs: 40, QueueCap: 3}}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend {
			counting.Backend = b
			j.Delivery = b.Journal()
			return peekBackend{countingGets: counting, j: j}
		}
	})
	key := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Direct, Peer: "94"}
	h.handle(in("tg", "94", "first"))
	if n := j.wanted.Load(); n != 1 {
		t.Fatalf("the first message's accept was asked for the settings %d times, want 1", n)
	}
	if n := counting.gets.Load(); n != 0 {
		t.Errorf("%d entry reads to queue the first message, want 0 (its accept read the settings)", n)
	}
	if s := h.d.laneSettings(key); s.Mode != lanes.Collect || s.Cap != 3 {
		t.Errorf("lane settings %+v, want the accept's: collect, cap 3", s)
	}
	h.drained()
	h.handle(in("tg", "94", "second"))
	h.drained()
	if n := j.wanted.Load(); n != 1 {
		t.Errorf("settings asked for %d times for two messages, want 1 (the second's were cached)", n)
	}
	if got := h.tg.texts(); len(got) != 2 {
		t.Errorf("answers %q, want two", got)
	}
}
