package lanes

import (
	"cmp"
	"slices"
	"time"
)

// Snapshot is what the lanes do at one moment (`gateway status`): the runs
// per class against their caps, the items queued, and the keys with the
// longest queues.
type Snapshot[K comparable] struct {
	// Running and Caps are the active runs and the caps, by class.
	Running map[Class]int
	Caps    map[Class]int
	// Waiting counts keys with queued items waiting for a class slot.
	Waiting int
	// Queued is the number of items queued over every key (not counting
	// the active runs' items).
	Queued int
	// Keys is how many keys hold state (queued, running, in Do or in a
	// quiet window).
	Keys int
	// Top are the keys with the most queued items, longest first (ties:
	// the oldest first item first), at most the number asked for.
	Top []KeyDepth[K]
}

// KeyDepth is one key of a Snapshot's Top.
type KeyDepth[K comparable] struct {
	Key     K
	Queued  int
	Running bool
	// Oldest is when the oldest queued item arrived.
	Oldest time.Time
}

// Snapshot returns the lanes' state with at most top keys in Top. It holds
// the Queue's lock for one pass over the non-idle keys (idle keys hold no
// state), so it costs what the busy sessions number, not all sessions.
func (q *Queue[K]) Snapshot(top int) Snapshot[K] {
	q.mu.Lock()
	s := Snapshot[K]{Running: map[Class]int{}, Caps: map[Class]int{}, Keys: len(q.keys)}
	for c, n := range q.caps {
		s.Caps[c] = n
	}
	for c, n := range q.active {
		if n > 0 {
			s.Running[c] = n
		}
	}
	var depths []KeyDepth[K]
	for k, l := range q.keys {
		s.Queued += len(l.items)
		if l.inWait {
			s.Waiting++
		}
		if len(l.items) > 0 && top > 0 {
			depths = append(depths, KeyDepth[K]{Key: k, Queued: len(l.items), Running: l.running, Oldest: l.items[0].At})
		}
	}
	q.mu.Unlock()
	slices.SortFunc(depths, func(a, b KeyDepth[K]) int {
		if c := cmp.Compare(b.Queued, a.Queued); c != 0 {
			return c
		}
		return a.Oldest.Compare(b.Oldest)
	})
	if len(depths) > top {
		depths = depths[:top]
	}
	s.Top = depths
	return s
}
