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

// busyTurns is a journal shared by replicas whose sessions another
// replica runs: BeginTurn never grants the lease (the batch waits for it
// outside its slot, lanes.Queue.Next); the first wait is reported.
type busyTurns struct {
	sessions.Delivery
	waiting chan struct{}
	once    atomic.Bool
}

func (s *busyTurns) BeginTurn(context.Context, string, string, []string) (*sessions.TurnHold, error) {
	return &sessions.TurnHold{}, nil
}

func (s *busyTurns) WaitTurn(ctx context.Context, _ string, d time.Duration) {
	if s.once.CompareAndSwap(false, true) {
		s.waiting <- struct{}{}
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

type busyTurnsBackend struct {
	sessions.Backend
	j *busyTurns
}

func (b busyTurnsBackend) Journal() sessions.Delivery { return b.j }

// TestStopWhileWaitingForTheSessionLease (SPEC §6.1 /stop, on a journal
// replicas share): a batch waiting for its session's lease (another
// replica runs the session) waits outside its slot; /stop ends that wait
// and the batch's messages as it does queued ones, instead of running
// them once the lease comes.
func TestStopWhileWaitingForTheSessionLease(t *testing.T) {
	turns := &busyTurns{waiting: make(chan struct{}, 1)}
	h := newHarness(t, "", nil, func(h *harness) {
		h.wrap = func(b sessions.Backend) sessions.Backend {
			turns.Delivery = b.Journal()
			return busyTurnsBackend{Backend: b, j: turns}
		}
	})
	h.handle(in("tg", "100", "hello"))
	<-turns.waiting
	h.handle(in("tg", "100", "/stop"))
	h.drained() // on main the wait goes on: the record stays pending
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls, want 0", n)
	}
}
