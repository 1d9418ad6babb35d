package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// slowTurns is a journal shared by replicas (sessions.Turns) whose
// BeginTurn, while hold is set, waits for its context, as a database's
// lease statement does when it is slow; otherwise the lease is free.
type slowTurns struct {
	sessions.Delivery
	hold    atomic.Bool
	waiting chan struct{}
}

func (s *slowTurns) BeginTurn(ctx context.Context, _, _ string, ids []string) (*sessions.TurnHold, error) {
	if s.hold.CompareAndSwap(true, false) {
		s.waiting <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("begin turn: %w", ctx.Err())
	}
	return &sessions.TurnHold{Held: true, Order: ids, End: func() {}}, nil
}

func (s *slowTurns) WaitTurn(ctx context.Context, _ string, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

type slowTurnsBackend struct {
	sessions.Backend
	j *slowTurns
}

func (b slowTurnsBackend) Journal() sessions.Delivery { return b.j }

// TestStopWhileTurnLeaseBegins (SPEC §6.1 /stop, on a journal replicas
// share): a batch cancelled by /stop while it asks for its session's
// lease is stopped as one cancelled later is: its records are finished,
// not left pending to run (and be answered) after the next start.
func TestStopWhileTurnLeaseBegins(t *testing.T) {
	turns := &slowTurns{waiting: make(chan struct{}, 1)}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend {
			turns.Delivery = b.Journal()
			return slowTurnsBackend{Backend: b, j: turns}
		}
	})
	turns.hold.Store(true)
	h.handle(in("tg", "99", "hello"))
	<-turns.waiting
	h.handle(in("tg", "99", "/stop"))
	h.drained() // on main the record stays pending: the next start answers it
	if got := h.tg.texts(); !slices.Equal(got, []string{"Stopped. 0 queued message(s) dropped."}) {
		t.Errorf("chat got %q", got)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls, want 0", n)
	}
}
