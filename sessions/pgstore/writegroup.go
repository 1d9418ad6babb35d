package pgstore

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Group commit of short writes (issue 21). The writes of a message's turn
// are small transactions, each worth a round trip and a commit of its own:
// the journal's records and marks (accept, start, ready, sent, done), the
// session's touch at Begin, transcript appends, usage rows, counters,
// session leases. A writeGroup commits the writes that callers hand it
// meanwhile in one transaction, sent as one pipelined batch: one round
// trip and one commit for all. A write fails alone: when the server
// refuses a group's transaction, each of its writes is tried again in a
// transaction of its own, in order; when the outcome is unknown (the
// connection was lost) they all fail, as each would have alone. A group
// runs its writes in the order of the rows they lock first (write.key), so
// two groups in flight never wait for each other's rows in a cycle.
//
// Writes that wait for their WAL flush (an accept, the reply's append, a
// new session) and writes committed lazily (lazy.go: marks, touches, the
// inputs' append) go in separate groups, each kind committed by its own
// goroutine on its own connection, one group at a time: a write is sent
// with whatever of its kind gathered while the group before it was in
// flight, and a lazy write never waits for another's flush. (Four
// committers sending each write as soon as one was free cost 5 round trips
// per message in cmd/gateway-bench, two of them 2.8, at the same
// throughput; one, or holding writes back a few milliseconds, cost
// throughput under load.)
//
// Riders are writes whose caller does not wait (a turn's start mark, its
// usage row, a reply's sent mark): one travels in the next group of lazy
// writes, at once when any other write is waiting or the rider is urgent
// (the sent mark), else after riderDelay; every write handed
// over after it learns its outcome only once the rider has its own, so a
// rider is committed when the write after it returns. A rider's outcome
// goes to its done function, which must not block.
//
// Run owns the committing goroutines (startWrites); writes handed over
// after they stopped run at once, alone.

// groupCommitters is how many groups a writeGroup commits at once: one of
// writes committed lazily, one of writes waiting for their WAL flush.
const groupCommitters = 2

// riderDelay is how long a rider waits for a write to carry it.
const riderDelay = 5 * time.Millisecond

// maxGroupWrites caps the writes of one group.
const maxGroupWrites = 128

// groupOpTimeout bounds the commit of one group or write.
const groupOpTimeout = 30 * time.Second

// OpGroup labels the round trips and commits of groups of several writes
// (each write alone keeps its own label).
const OpGroup = "group"

// write is one caller's statements, committed together.
type write struct {
	op string
	// key names the row the write locks first (rowKey): a group takes
	// its writes in key order, so two groups in flight never lock one
	// row each and wait for the other's (a deadlock).
	key string
	// fill queues the statements. It is called once per try (a group,
	// then alone), so what its callbacks report must be set afresh, not
	// accumulated. A callback's error fails this write only; a
	// statement the server refuses aborts its transaction. A nil fill
	// writes nothing (a barrier).
	fill func(b *pgx.Batch)
	// sync makes the commit wait for the WAL flush.
	sync bool
	// rider: sent with the next write that is not one, or after
	// riderDelay; done (if set) gets the outcome.
	rider bool
	done  func(error)
	// urgent: a rider that goes at once, with the next group of lazy
	// writes, instead of waiting riderDelay for a write to carry it (a
	// mark nobody waits for that should be on the server as soon as any
	// waited write would be).
	urgent bool

	queued time.Time
	// seq numbers a rider among the riders handed over; after is, for a
	// write that is not one, how many riders were handed over before it:
	// it learns its outcome once they have theirs.
	seq, after uint64
	err        error
	// met is the server's refusal of one of this write's own statements
	// in the last try (writegroup_commit.go), nil if none.
	met  error
	over chan struct{} // closed when err is final (not for riders)
}

// writeGroup is the DB's group commit; see above.
type writeGroup struct {
	db         *DB
	committers int

	// mu guards the fields below.
	mu      sync.Mutex
	queue   []*write
	stopped bool
	riders  uint64              // riders handed over so far
	pending map[uint64]struct{} // riders without their outcome yet, by seq
	held    []*write            // writes done, waiting for the riders before them

	// heldRows holds the rows (write.key) that met a lock lately and
	// when; side, the writes of those rows waiting on the side path
	// (writegroup_side.go).
	heldRows map[string]time.Time
	side     []*write

	// wake[0] wakes a committer of lazy writes and riders, wake[1] one of
	// writes waiting for a flush (the same channel with one committer);
	// capacity 1. sideWake wakes the side path.
	wake     [2]chan struct{}
	sideWake chan struct{}
}

// newWriteGroup returns a group commit of n committers; run starts them.
func newWriteGroup(db *DB, n int) *writeGroup {
	g := &writeGroup{db: db, committers: n, sideWake: make(chan struct{}, 1)}
	g.wake[0] = make(chan struct{}, 1)
	g.wake[1] = g.wake[0]
	if n > 1 {
		g.wake[1] = make(chan struct{}, 1)
	}
	return g
}

// do hands w over and waits for its outcome. Once handed over, w is
// committed or failed whatever ctx does: the caller must learn which.
func (g *writeGroup) do(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.over = make(chan struct{})
	g.submit(w)
	<-w.over
	return w.err
}

// doAll is do for several writes handed over together (one group when a
// committer is free); it returns the first error.
func (g *writeGroup) doAll(ctx context.Context, ws []*write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, w := range ws {
		w.over = make(chan struct{})
	}
	g.submit(ws...)
	var first error
	for _, w := range ws {
		<-w.over
		if first == nil {
			first = w.err
		}
	}
	return first
}

// barrier returns once every rider handed over before it is committed
// or failed (its outcome handed to its done function). It costs no round
// trip.
func (g *writeGroup) barrier() {
	w := &write{op: OpGroup, over: make(chan struct{})}
	g.submit(w)
	<-w.over
}

// ride hands w over as a rider, without waiting.
func (g *writeGroup) ride(w *write) {
	w.rider = true
	g.submit(w)
}

func (g *writeGroup) submit(ws ...*write) {
	now := time.Now()
	g.mu.Lock()
	for _, w := range ws {
		w.queued = now
		if w.rider {
			g.riders++
			w.seq = g.riders
			if g.pending == nil {
				g.pending = map[uint64]struct{}{}
			}
			g.pending[w.seq] = struct{}{}
		} else {
			w.after = g.riders
		}
	}
	if g.stopped {
		g.mu.Unlock()
		for _, w := range ws {
			g.commit([]*write{w})
			notify([]*write{w})
		}
		return
	}
	g.queue = append(g.queue, ws...)
	g.mu.Unlock()
	for _, w := range ws {
		g.signal(w.sync && !w.rider)
	}
}

// signal wakes an idle committer of writes that wait for their flush
// (flush) or of the others.
func (g *writeGroup) signal(flush bool) {
	ch := g.wake[0]
	if flush {
		ch = g.wake[1]
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run commits groups until ctx ends, then what is still queued; beside
// the committers, the side path commits the writes of held rows
// (writegroup_side.go).
func (g *writeGroup) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range g.committers {
		flush := i%2 == 1 // with two or more, some commit the writes that wait for their flush
		if g.committers == 1 {
			flush = false
		}
		wg.Go(func() { g.loop(ctx, flush) })
	}
	wg.Go(func() { g.sideLoop(ctx) })
	wg.Wait()
}

// loop commits groups of the writes that wait for their WAL flush (flush)
// or of those that do not; a writeGroup of one committer commits both.
func (g *writeGroup) loop(ctx context.Context, flush bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		group, wait := g.take(false, flush)
		if group != nil {
			g.commit(group)
			g.release(group)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		wake := g.wake[0]
		if flush {
			wake = g.wake[1]
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			g.mu.Lock()
			g.stopped = true
			g.mu.Unlock()
			g.signal(false) // the other committers drain too
			g.signal(true)
			for {
				group, _ := g.take(true, flush)
				if group == nil {
					return
				}
				g.commit(group)
				g.release(group)
			}
		}
		timer.Stop()
	}
}

// take returns the next group of a committer of flush: the writes
// queued that wait for their WAL flush or, for !flush, those that do not
// and the riders, once one is not a rider or the oldest rider waited
// riderDelay (at once when all is set); otherwise how long to wait for
// that. A single committer takes either kind, whichever comes first. So a
// write committed lazily is never held up by another's flush, and the
// writes of each kind gather behind the group of their kind in flight.
func (g *writeGroup) take(all, flush bool) ([]*write, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !all {
		g.sideLocked() // the writes of a held row wait on the side
	}
	if len(g.queue) == 0 {
		return nil, 0
	}
	both := g.committers == 1
	var first *write
	waiter := false // a write that is not a rider: the riders before it go now
	for _, w := range g.queue {
		waiter = waiter || !w.rider || w.urgent
		if !w.rider && (both || w.sync == flush) {
			first = w
			break
		}
	}
	if first == nil && flush && !both {
		return nil, 0 // nothing waits for a flush
	}
	if age := time.Since(g.queue[0].queued); !waiter && !all && age < riderDelay {
		return nil, riderDelay - age
	}
	if both {
		flush = first != nil && first.sync
	}
	var group []*write
	rest := g.queue[:0]
	for _, w := range g.queue {
		if len(group) < maxGroupWrites && ((w.rider && !flush) || (!w.rider && w.sync == flush)) {
			group = append(group, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	for _, w := range g.queue { // left for another committer: writes of the other kind, or past a group
		g.signal(w.sync && !w.rider)
	}
	return group, 0
}

// release hands the writes of a committed group their outcome: riders at
// once, the others once every rider handed over before them has had its
// own (so that a rider is committed, or failed, when the write after it
// returns).
func (g *writeGroup) release(group []*write) {
	g.mu.Lock()
	var ready []*write
	for _, w := range group {
		if w.rider {
			delete(g.pending, w.seq)
			ready = append(ready, w)
		} else {
			g.held = append(g.held, w)
		}
	}
	oldest := uint64(math.MaxUint64) // the first rider without an outcome
	for seq := range g.pending {
		oldest = min(oldest, seq)
	}
	held := g.held[:0]
	for _, w := range g.held {
		if w.after < oldest {
			ready = append(ready, w)
		} else {
			held = append(held, w)
		}
	}
	clear(g.held[len(held):])
	g.held = held
	g.mu.Unlock()
	notify(ready)
}

// notify hands each write its outcome.
func notify(ws []*write) {
	for _, w := range ws {
		if w.over != nil {
			close(w.over)
		}
		if w.done != nil {
			w.done(w.err)
		}
	}
}
