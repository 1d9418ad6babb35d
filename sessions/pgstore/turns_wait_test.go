package pgstore

import (
	"context"
	"testing"
	"time"
)

// waiterChan returns the channel of the waiter of lease name once it
// waits (white box: the test then wakes it by hand, no listener).
func waiterChan(t *testing.T, w *leaseWaiters, name string) chan struct{} {
	t.Helper()
	for {
		w.mu.Lock()
		for ch, n := range w.subs {
			if n == name {
				w.mu.Unlock()
				return ch
			}
		}
		w.mu.Unlock()
		select {
		case <-ctxT(t).Done():
			t.Fatalf("no waiter for %s", name)
		case <-time.After(time.Millisecond):
		}
	}
}

// A release wakes the waiter of that lease only (issue 21: waking every
// waiter on every release cost a BeginTurn per waiting session and
// message), a release while the BeginTurn before the wait was in flight
// ends that wait at once, and a possibly missed release ("") wakes all.
func TestLeaseWaitersWakeTheirSession(t *testing.T) {
	t.Parallel()
	const mine, other = "session:agent:main:a", "session:agent:main:b"
	w := &leaseWaiters{started: true} // no listener: the test plays it

	ch, otherCh := make(chan struct{}, 1), make(chan struct{}, 1)
	w.subs = map[chan struct{}]string{ch: mine, otherCh: other}
	w.released(other)
	if len(ch) != 0 || len(otherCh) != 1 {
		t.Fatalf("after a release of %s: its waiter woken %v, %s's %v; want only its own", other, len(otherCh) == 1, mine, len(ch) == 1)
	}
	w.released(mine)
	if len(ch) != 1 {
		t.Fatal("the session's release did not wake its waiter")
	}
	w.subs = nil

	// Released between the BeginTurn's send and the wait: not lost.
	w.ask(mine)
	w.released(mine)
	ctx, cancel := context.WithTimeout(ctxT(t), time.Minute)
	defer cancel()
	w.wait(ctx, nil, mine, time.Hour)
	if ctx.Err() != nil {
		t.Fatal("a release heard during the BeginTurn did not end the wait after it")
	}
	// Taken (held): nothing remembered for the next wait.
	w.ask(mine)
	w.released(mine)
	w.held(mine)
	if _, ok := w.asked[mine]; ok {
		t.Fatal("a held lease's ask is still remembered")
	}

	// A reconnection ("") wakes every waiter, and every ask in flight.
	w.ask(other)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.wait(ctxT(t), nil, mine, time.Hour)
	}()
	waiterChan(t, w, mine)
	w.released("")
	<-done
	if !w.asked[other] {
		t.Fatal("a reconnection did not reach the ask in flight")
	}
}
