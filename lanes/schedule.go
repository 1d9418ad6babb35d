package lanes

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// kickLocked moves a lane that is neither running nor inside Do to its
// next state: grant a waiting Do, forget it when idle, arm the debounce
// timer, or put it in line for a class slot.
func (q *Queue[K]) kickLocked(l *lane[K], now time.Time) {
	if l.running || l.doing {
		return
	}
	if len(l.doers) > 0 {
		q.grantDoLocked(l)
		return
	}
	if !l.pendingLocked() || q.closed {
		q.forgetIfIdleLocked(l)
		return
	}
	if l.inWait || l.timer != nil {
		// Already in line, or the timer will kick again (and re-read the
		// last arrival, which may have moved).
		return
	}
	if at := l.readyAt(now); at.After(now) {
		q.armLocked(l, at.Sub(now))
		return
	}
	l.inWait, l.waitSince = true, now
	w := q.waits[l.class]
	if w == nil {
		w = &waitList[K]{}
		q.waits[l.class] = w
	}
	w.push(l)
	q.pumpLocked(l.class, now)
}

// pumpLocked starts waiting lanes of class while slots are free.
func (q *Queue[K]) pumpLocked(class Class, now time.Time) {
	w := q.waits[class]
	if w == nil {
		return
	}
	for w.len() > 0 && q.active[class] < q.capOf(class) {
		l := w.pop()
		l.inWait = false
		if q.keys[l.key] != l {
			continue // forgotten while in line
		}
		if l.running || l.doing || !l.pendingLocked() || q.closed || len(l.doers) > 0 {
			// Not runnable now; whoever changes that kicks it again.
			if !l.running && !l.doing {
				q.kickLocked(l, now)
			}
			continue
		}
		q.startLocked(l, class, now)
	}
	if w.len() == 0 && q.active[class] == 0 {
		delete(q.waits, class)
	}
}

// armLocked starts the debounce timer. The timer is counted in q.wg until
// it is stopped or its callback returns.
func (q *Queue[K]) armLocked(l *lane[K], d time.Duration) {
	q.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer q.wg.Done()
		q.mu.Lock()
		defer q.mu.Unlock()
		if l.timer != t {
			return // stopped after it fired
		}
		l.timer = nil
		if q.keys[l.key] == l {
			q.kickLocked(l, time.Now())
		}
	})
	l.timer = t
}

// stopTimerLocked disarms the debounce timer, if any.
func (q *Queue[K]) stopTimerLocked(l *lane[K]) {
	if l.timer == nil {
		return
	}
	if l.timer.Stop() {
		q.wg.Done()
	}
	l.timer = nil
}

func (q *Queue[K]) forgetIfIdleLocked(l *lane[K]) {
	if l.idle() && q.keys[l.key] == l {
		delete(q.keys, l.key)
	}
}

// startLocked takes a class slot and runs l's next batch in a goroutine
// owned by q.wg.
func (q *Queue[K]) startLocked(l *lane[K], class Class, now time.Time) {
	items := l.takeBatchLocked()
	b := Batch[K]{Key: l.key, Class: class, Items: items, Dropped: l.dropped}
	l.dropped = nil
	l.running, l.runClass = true, class
	l.seq++
	l.group = ""
	if len(items) > 0 {
		l.group = items[0].Group
	}
	l.noCancel = len(items) > 0
	for _, it := range items {
		l.noCancel = l.noCancel && it.NoCancel
	}
	q.active[class]++
	ctx, cancel := context.WithCancelCause(q.base)
	l.cancel = cancel
	if l.set.Mode == Steer || l.set.Mode == SteerBacklog {
		seq := l.seq
		b.Steer = func() []Item { return q.steer(l, seq) }
	}
	wait := now.Sub(l.waitSince)
	q.wg.Add(1)
	go q.run(ctx, l, b, wait)
}

// run executes one batch and hands the lane and the slot on.
func (q *Queue[K]) run(ctx context.Context, l *lane[K], b Batch[K], wait time.Duration) {
	defer q.wg.Done()
	defer q.finish(l)
	if q.opts.OnWait != nil {
		q.opts.OnWait(b.Class, wait)
	}
	if wait > SlowWait {
		q.log.Warn("lane wait", zap.Any("session_key", b.Key), zap.String("lane_class", string(b.Class)),
			zap.Int64("lane_wait_ms", wait.Milliseconds()), zap.Int("batch_items", len(b.Items)))
	}
	defer func() {
		// A panicking runner must not wedge the lane or the daemon.
		if r := recover(); r != nil {
			q.log.Error("lane run panicked", zap.Any("session_key", b.Key), zap.Any("panic", r), zap.Stack("stack"))
		}
	}()
	q.opts.Run(ctx, b)
}

// finish releases the run's slot and moves the lane on, under the key's
// settings as they are now: a reload or an override made while the run
// was active applies to the items queued behind it.
func (q *Queue[K]) finish(l *lane[K]) {
	s, fresh := q.queuedSettings(l)
	q.mu.Lock()
	defer q.mu.Unlock()
	if fresh {
		l.set = s
	}
	l.cancel(nil)
	l.cancel = nil
	l.running = false
	q.active[l.runClass]--
	now := time.Now()
	q.kickLocked(l, now)
	q.pumpLocked(l.runClass, now)
}

// queuedSettings reads l's key's settings, outside the lock, when items
// wait in l for them to apply to (fresh); with none waiting it reads
// nothing (a run's end is on every message's path, and the Settings func
// may read the session's entry): the next Enqueue reads them itself.
func (q *Queue[K]) queuedSettings(l *lane[K]) (s Settings, fresh bool) {
	q.mu.Lock()
	waiting := l.pendingLocked()
	q.mu.Unlock()
	if !waiting {
		return Settings{}, false
	}
	return q.settings(l.key), true
}

// steer hands the active run the queued items of its Group (in
// steer-backlog mode, those it was not handed yet, left queued).
func (q *Queue[K]) steer(l *lane[K], seq uint64) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !l.running || l.seq != seq || len(l.items) == 0 {
		return nil
	}
	if l.set.Mode == SteerBacklog {
		return l.markSteeredLocked(l.group)
	}
	out := l.takeGroupLocked(l.group, true)
	l.behind = len(l.items) > 0
	return out
}
