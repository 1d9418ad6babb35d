package dispatch

import (
	"sync"
	"time"
)

// later owns the dispatcher's delayed retries (a failed turn's backoff, a
// parked batch waiting for the disk, a lost lease's requeue, a batch
// waiting for room in its lane): each is a timer it started, so Shutdown
// can stop those that have not fired (their records stay pending in the
// journal for the next start) and wait for those running.
type later struct {
	mu      sync.Mutex
	closed  bool
	pending map[*time.Timer]struct{}
	running sync.WaitGroup
}

// after runs fn once wait has passed, unless stop came first.
func (l *later) after(wait time.Duration, fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if l.pending == nil {
		l.pending = map[*time.Timer]struct{}{}
	}
	l.running.Add(1)
	var t *time.Timer
	// The callback takes mu first, which after holds until t is set.
	t = time.AfterFunc(wait, func() {
		defer l.running.Done()
		l.mu.Lock()
		delete(l.pending, t)
		closed := l.closed
		l.mu.Unlock()
		if !closed {
			fn()
		}
	})
	l.pending[t] = struct{}{}
}

// stop stops the timers not fired yet, refuses new ones and waits for the
// callbacks running.
func (l *later) stop() {
	l.mu.Lock()
	l.closed = true
	for t := range l.pending {
		if t.Stop() {
			l.running.Done()
		}
		delete(l.pending, t)
	}
	l.mu.Unlock()
	l.running.Wait()
}
