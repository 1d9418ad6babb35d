package pgstore

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"
)

// The side path of a held row (issue 21). A write that meets a row another
// transaction holds (an operator's open transaction in psql, a replica
// frozen inside one) waits groupLockTimeout and fails with its row's other
// writes, and the rest of its group commits without them
// (writegroup_commit.go): the group, and every write queued behind it (all
// sessions'), waits one lock timeout. While the row stays held, its
// session's turn runs again every few seconds and its write would cost
// another group the same wait each time. So a row that met a lock is
// remembered (heldRows, by write.key) for heldRowFor, and the writes
// of that row that are not riders go to a side path meanwhile: one
// goroutine that commits them one at a time, alone, in the order they
// were handed over, on a connection of the pools' second; they wait for
// the row there, and the groups go on without them. The row leaves the
// side path when a write of it commits there, or heldRowFor after it
// last met the lock. Riders keep to the groups (a rider's outcome comes
// before those of the writes handed over after it: a rider waiting for a
// row on the side would hold them all). Once the group commit stops,
// nothing is sent to the side; what is there is committed first.

// heldRowFor is how long a row that met a lock keeps its writes on the
// side path without one of them committing there.
const heldRowFor = 30 * time.Second

// pruneHeldLocked forgets the rows that last met a lock longer than
// heldRowFor ago, so that once none is held the queue is not scanned
// (sideLocked's length check) — a row a write never came back for would
// otherwise cost every group's take that scan forever. The caller holds
// g.mu.
func (g *writeGroup) pruneHeldLocked(now time.Time) {
	for key, at := range g.heldRows {
		if now.Sub(at) > heldRowFor {
			delete(g.heldRows, key)
		}
	}
}

// noteHeld remembers that w's row met a lock now (w timedOut); a row
// that was not on the side path yet is logged going there. It takes g.mu
// itself: the caller must not hold it.
func (g *writeGroup) noteHeld(w *write) {
	if w.key == "" {
		return
	}
	g.mu.Lock()
	if g.heldRows == nil {
		g.heldRows = map[string]time.Time{}
	}
	_, known := g.heldRows[w.key]
	g.heldRows[w.key] = time.Now()
	g.mu.Unlock()
	if !known {
		g.db.log.Warn("a row another transaction holds: its writes wait for it alone until it is free",
			zap.String("row", keyText(w.key)), zap.String("op", w.op))
	}
}

// keyText is a write.key for a log: its parts joined by ":".
func keyText(key string) string { return strings.ReplaceAll(key, "\x00", ":") }

// sideLocked moves the queued writes of rows that met a lock (not riders)
// to the side path, in their order, and wakes it. Not once the group
// commit stopped. The caller holds g.mu.
func (g *writeGroup) sideLocked() {
	if len(g.heldRows) == 0 || g.stopped {
		return
	}
	g.pruneHeldLocked(time.Now())
	if len(g.heldRows) == 0 {
		return
	}
	moved := false
	rest := g.queue[:0]
	for _, w := range g.queue {
		if _, held := g.heldRows[w.key]; held && !w.rider && w.key != "" {
			g.side = append(g.side, w)
			moved = true
		} else {
			rest = append(rest, w)
		}
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	if moved {
		select {
		case g.sideWake <- struct{}{}:
		default:
		}
	}
}

// sideLoop commits the side path's writes one at a time until the group
// commit stopped and none is left (run starts it beside the committers).
func (g *writeGroup) sideLoop(ctx context.Context) {
	for {
		g.mu.Lock()
		var w *write
		if len(g.side) > 0 {
			w = g.side[0]
			g.side[0] = nil
			g.side = g.side[1:]
		}
		stopped := g.stopped
		g.mu.Unlock()
		if w == nil {
			if stopped {
				return
			}
			select {
			case <-g.sideWake:
			case <-ctx.Done():
				g.mu.Lock()
				g.stopped = true // as the committers do: nothing more comes to the side
				g.mu.Unlock()
			}
			continue
		}
		g.tryAlone(w) // one that met the lock again is noted again there (noteHeld)
		g.mu.Lock()
		_, freed := g.heldRows[w.key]
		freed = freed && w.err == nil
		if freed {
			delete(g.heldRows, w.key) // the row is free again
		}
		g.mu.Unlock()
		if freed {
			g.db.log.Info("a held row is free again; its writes go with the others", zap.String("row", keyText(w.key)))
		}
		g.release([]*write{w})
	}
}
