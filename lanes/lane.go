package lanes

import (
	"context"
	"time"
)

// lane is the state of one non-idle key. All fields are guarded by
// Queue.mu. A lane is removed from Queue.keys as soon as it is idle; a
// removed lane may linger in a waitList until popped, where it is skipped.
type lane[K comparable] struct {
	key   K
	class Class
	set   Settings // latest settings, fetched by Enqueue

	items   []Item // queued, in arrival order
	dropped []Item // dropped with a summary, for the next batch (Batch.Dropped)
	last    time.Time
	// behind is set when items queued while the key was busy, so the
	// collect debounce applies to them.
	behind bool

	running  bool                    // a batch run holds a class slot
	runClass Class                   // class whose slot the run holds
	cancel   context.CancelCauseFunc // cancels the active run
	noCancel bool                    // the active batch's items are all NoCancel (interrupt mode does not cancel it)
	seq      uint64                  // run number, for Steer
	group    string                  // Group of the active batch

	doing bool            // a Do fn runs
	doers []chan struct{} // Do calls waiting, closed to grant
	// nexts cancel the contexts of the Next fns registered and not
	// returned yet, by registration number (Cancel calls them).
	nexts map[uint64]context.CancelCauseFunc

	inWait    bool // in the class waitList
	waitSince time.Time
	timer     *time.Timer // debounce timer, counted in Queue.wg
}

// laneLocked returns key's lane, creating it.
func (q *Queue[K]) laneLocked(key K) *lane[K] {
	l := q.keys[key]
	if l == nil {
		l = &lane[K]{key: key}
		q.keys[key] = l
	}
	return l
}

// supersedeLocked moves the items among the n oldest queued ones not
// marked NoInterrupt into the next batch's Dropped (interrupt mode: they
// are summarised, never silently lost); the NoInterrupt ones stay queued,
// in order.
func (l *lane[K]) supersedeLocked(n int) {
	if n <= 0 {
		return
	}
	kept := l.items[:0]
	for i, it := range l.items {
		if i < n && !it.NoInterrupt {
			l.dropped = append(l.dropped, it)
			continue
		}
		kept = append(kept, it)
	}
	clear(l.items[len(kept):])
	l.items = kept
	if len(l.items) == 0 {
		l.items = nil
	}
}

// newestInterruptingLocked is the index of the newest queued item not
// marked NoInterrupt, -1 when there is none.
func (l *lane[K]) newestInterruptingLocked() int {
	for i := len(l.items) - 1; i >= 0; i-- {
		if !l.items[i].NoInterrupt {
			return i
		}
	}
	return -1
}

// dropOverflowLocked removes the n oldest queued items not marked Keep or
// Steered (fewer when not that many are). With summarize set they go to
// the next batch's Dropped; otherwise they are returned, for
// Options.OnDrop.
func (l *lane[K]) dropOverflowLocked(n int, summarize bool) []Item {
	var out []Item
	kept := l.items[:0]
	dropped := 0
	for _, it := range l.items {
		if dropped < n && !it.Keep && !it.Steered {
			dropped++
			if summarize {
				l.dropped = append(l.dropped, it)
			} else {
				out = append(out, it)
			}
			continue
		}
		kept = append(kept, it)
	}
	clear(l.items[len(kept):])
	l.items = kept
	if len(l.items) == 0 {
		l.items = nil
	}
	return out
}

// waitingLocked counts the queued items the cap applies to: in
// steer-backlog mode an item already handed to the active run (Steered)
// stays queued for its follow-up turn, but the model has seen it and its
// text is in the transcript, so it neither takes a place under the cap
// nor can the overflow policy drop it.
func (l *lane[K]) waitingLocked() int {
	n := 0
	for i := range l.items {
		if !l.items[i].Steered {
			n++
		}
	}
	return n
}

// shiftLocked removes the n oldest queued items without keeping references
// to them in the backing array.
func (l *lane[K]) shiftLocked(n int) {
	m := copy(l.items, l.items[n:])
	clear(l.items[m:])
	l.items = l.items[:m]
	if m == 0 {
		l.items = nil
	}
}

// readyAt is when the queued items may start: after the quiet window in
// collect mode for items that queued behind a run, at once otherwise.
func (l *lane[K]) readyAt(now time.Time) time.Time {
	if l.set.Mode == Collect && l.behind && l.set.Debounce > 0 {
		return l.last.Add(l.set.Debounce)
	}
	return now
}

// idle reports whether the lane holds nothing and can be forgotten.
func (l *lane[K]) idle() bool {
	return !l.running && !l.doing && len(l.items) == 0 && len(l.dropped) == 0 && len(l.doers) == 0 && l.timer == nil
}

// pendingLocked reports whether the lane has work for a batch: queued
// items, or items dropped with a summary that no batch took yet (in steer
// mode the active run may take every item queued after them: they then
// run alone, in a batch of their own with no Items).
func (l *lane[K]) pendingLocked() bool {
	return len(l.items) > 0 || len(l.dropped) > 0
}

// takeBatchLocked removes the next batch's items from the queue according
// to the mode (none when only dropped items wait).
func (l *lane[K]) takeBatchLocked() (items []Item) {
	if len(l.items) == 0 {
		return nil
	}
	switch l.set.Mode {
	case Followup, FIFO:
		items = []Item{l.items[0]}
		l.shiftLocked(1)
	case Interrupt:
		// The newest item supersedes those before it (a mode changed to
		// interrupt while several queued); NoInterrupt items run in order
		// with it.
		l.supersedeLocked(l.newestInterruptingLocked())
		items, l.items = l.items, nil
	default: // Collect, Steer, SteerBacklog: every queued item of the oldest item's Group.
		items = l.takeGroupLocked(l.items[0].Group, false)
	}
	l.behind = len(l.items) > 0
	return items
}

// markSteeredLocked marks the queued items of group not yet steered, up to
// the group's first NoSteer item, as Steered and returns copies of them
// (steer-backlog: they stay queued for a batch of their own).
func (l *lane[K]) markSteeredLocked(group string) []Item {
	var out []Item
	for i := range l.items {
		it := &l.items[i]
		if it.Group != group {
			continue
		}
		if it.NoSteer {
			break
		}
		if !it.Steered {
			it.Steered = true
			out = append(out, *it)
		}
	}
	return out
}

// takeGroupLocked removes and returns the queued items of group, keeping
// the others in order. With steering set it stops at the group's first
// NoSteer item, which stays queued with everything of the group after it.
func (l *lane[K]) takeGroupLocked(group string, steering bool) []Item {
	var out []Item
	rest := l.items[:0]
	stopped := false
	for _, it := range l.items {
		if it.Group == group && steering && it.NoSteer {
			stopped = true
		}
		if it.Group == group && !stopped && !(steering && it.Steered) { // steered once is enough
			out = append(out, it)
		} else {
			rest = append(rest, it)
		}
	}
	clear(l.items[len(rest):])
	l.items = rest
	if len(l.items) == 0 {
		l.items = nil
	}
	return out
}

// waitList is a FIFO of lanes waiting for a class slot.
type waitList[K comparable] struct {
	lanes []*lane[K]
	head  int
}

func (w *waitList[K]) push(l *lane[K]) { w.lanes = append(w.lanes, l) }

func (w *waitList[K]) len() int { return len(w.lanes) - w.head }

func (w *waitList[K]) pop() *lane[K] {
	l := w.lanes[w.head]
	w.lanes[w.head] = nil
	w.head++
	if w.head == len(w.lanes) {
		w.lanes, w.head = w.lanes[:0], 0
	} else if w.head > 64 && w.head*2 > len(w.lanes) {
		n := copy(w.lanes, w.lanes[w.head:])
		clear(w.lanes[n:])
		w.lanes, w.head = w.lanes[:n], 0
	}
	return l
}
