package lanes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Cancel cancels key's active run (its ctx) and the contexts of the fns
// Next registered for key (running or waiting: a run's work handed on is
// that run's), and drops its queued items, returning them with the
// dropped ones no batch took yet (Batch.Dropped), oldest first. The
// contexts' cause is ErrCancelled. It does not wait for the run or the fns
// to return.
func (q *Queue[K]) Cancel(key K) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.keys[key]
	if l == nil {
		return nil
	}
	if l.cancel != nil {
		l.cancel(ErrCancelled)
	}
	for _, cancel := range l.nexts {
		cancel(ErrCancelled)
	}
	items := append(l.dropped, l.items...)
	l.items, l.dropped, l.behind = nil, nil, false
	q.stopTimerLocked(l)
	q.forgetIfIdleLocked(l)
	return items
}

// Do runs fn on the caller's goroutine, serialised with key's runs: it
// waits for the active run (and earlier Do calls) to end, then runs before
// the items already queued, which keep their order after it. Do takes no
// class slot. It returns ErrClosed after Shutdown began and ctx's error if
// ctx ends while waiting; fn then does not run.
func (q *Queue[K]) Do(ctx context.Context, key K, fn func(ctx context.Context)) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("lanes: do: %w", ErrClosed)
	}
	l := q.laneLocked(key)
	if l.running || l.doing || len(l.doers) > 0 {
		ch := make(chan struct{})
		l.doers = append(l.doers, ch)
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			q.mu.Lock()
			if i := slices.Index(l.doers, ch); i >= 0 {
				l.doers = slices.Delete(l.doers, i, i+1)
				q.forgetIfIdleLocked(l)
				q.mu.Unlock()
				return fmt.Errorf("lanes: do: %w", ctx.Err())
			}
			// Granted meanwhile: give the turn back.
			l.doing = false
			q.kickLocked(l, time.Now())
			q.mu.Unlock()
			return fmt.Errorf("lanes: do: %w", ctx.Err())
		}
	} else {
		l.doing = true
		q.mu.Unlock()
	}
	defer q.endDo(l)
	fn(ctx)
	return nil
}

// endDo hands the lane on after a Do or Next fn returned, under the key's
// settings as they are now (the fn may have changed them: /queue).
func (q *Queue[K]) endDo(l *lane[K]) {
	s, fresh := q.queuedSettings(l)
	q.mu.Lock()
	defer q.mu.Unlock()
	if fresh {
		l.set = s
	}
	l.doing = false
	now := time.Now()
	q.kickLocked(l, now)
	if l.inWait {
		q.pumpLocked(l.class, now)
	}
}

// grantDoLocked lets the first waiting Do call run.
func (q *Queue[K]) grantDoLocked(l *lane[K]) {
	ch := l.doers[0]
	l.doers = slices.Delete(l.doers, 0, 1)
	if len(l.doers) == 0 {
		l.doers = nil
	}
	l.doing = true
	close(ch)
}

// Shutdown stops accepting work (Enqueue, Do and Next return ErrClosed),
// lets the active runs and the fns Next registered finish until ctx ends,
// then cancels their contexts (a Next fn's with cause ErrClosed) and waits
// for them to return: once it returns, nothing the queue started runs. The items still queued are returned, oldest first,
// with the dropped ones no batch took yet (their durable copies live
// elsewhere). Do calls already waiting still run.
func (q *Queue[K]) Shutdown(ctx context.Context) []Item {
	q.mu.Lock()
	var left []Item
	if !q.closed {
		q.closed = true
		for _, l := range q.keys {
			q.stopTimerLocked(l)
			left = append(left, l.dropped...)
			left = append(left, l.items...)
			l.items, l.dropped, l.behind = nil, nil, false
			q.forgetIfIdleLocked(l)
		}
	}
	q.mu.Unlock()
	slices.SortStableFunc(left, func(a, b Item) int { return a.At.Compare(b.At) })

	done := make(chan struct{})
	go func() {
		q.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		q.baseCancel()
		q.mu.Lock()
		for _, l := range q.keys {
			for _, cancel := range l.nexts {
				cancel(ErrClosed)
			}
		}
		q.mu.Unlock()
		<-done
	}
	q.baseCancel()
	return left
}

// Next is Do without waiting: it registers fn at once and runs it on a
// goroutine of its own, serialised with key's runs, before the items
// queued when it is granted. Called from key's active run, fn runs as soon
// as that run returns, ahead of what queued meanwhile (a run that must
// wait for something outside the process hands its batch on this way,
// without holding a class slot). fn gets a context derived from ctx that
// Cancel(key) cancels too; Next does not watch it: fn must return soon
// after it ends. It returns ErrClosed after Shutdown began; fn then does
// not run.
func (q *Queue[K]) Next(ctx context.Context, key K, fn func(ctx context.Context)) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("lanes: next: %w", ErrClosed)
	}
	l := q.laneLocked(key)
	ch := make(chan struct{})
	if l.running || l.doing || len(l.doers) > 0 {
		l.doers = append(l.doers, ch)
	} else {
		l.doing = true
		close(ch)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	q.nextN++
	id := q.nextN
	if l.nexts == nil {
		l.nexts = map[uint64]context.CancelCauseFunc{}
	}
	l.nexts[id] = cancel
	q.wg.Add(1) // under mu, with closed false: before Shutdown's Wait
	q.mu.Unlock()
	go func() {
		defer q.wg.Done()
		<-ch
		defer q.endDo(l)
		defer func() {
			q.mu.Lock()
			delete(l.nexts, id)
			q.mu.Unlock()
			cancel(nil)
		}()
		defer func() {
			if r := recover(); r != nil { // as a run's: never wedge the lane
				q.log.Error("lane next panicked", zap.Any("session_key", key), zap.Any("panic", r), zap.Stack("stack"))
			}
		}()
		fn(ctx)
	}()
	return nil
}
