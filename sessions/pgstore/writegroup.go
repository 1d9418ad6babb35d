package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// Group commit of short writes (issue 21). The writes of a message's turn
// are small transactions, each worth a round trip and a commit of its own:
// the journal's records and marks (accept, start, ready, sent, done), the
// session's touch at Begin, transcript appends, usage rows, counters. A
// writeGroup commits the writes that callers hand it meanwhile in one
// transaction, sent as one pipelined batch: one round trip and one commit
// for all, committed lazily (lazy.go) unless one of them needs its WAL
// flush, which the others then get too. A write fails alone: when the
// server refuses a group's transaction, each of its writes is tried again
// in a transaction of its own, in order.
//
// Up to groupCommitters groups are in flight at once, each on its own
// connection: a write is sent as soon as a committer is free, with
// whatever gathered meanwhile, so grouping adds no wait (and a slow flush
// does not stall the writes gathering behind it). Holding writes back to
// gather larger groups halved the daemon's throughput in cmd/gateway-bench
// (the turns' writes are sequential). Writes learn their outcome in the
// order their groups were taken: a write that returned implies every
// write handed over before it is committed (or failed). That makes riders possible: a write whose
// caller does not wait (a turn's start mark, its usage row) travels with
// the next write anyone waits for, or on its own after riderDelay, and is
// committed when that write returns. A rider's outcome goes to its done
// function, which must not block.
//
// Run owns the committing goroutines (startWrites); writes handed over
// after they stopped run at once, alone.

// groupCommitters is how many groups a writeGroup commits at once.
const groupCommitters = 4

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

	queued time.Time
	err    error
	over   chan struct{} // closed when err is final (not for riders)
}

// writeGroup is the DB's group commit; see above.
type writeGroup struct {
	db         *DB
	committers int

	// mu guards the fields below.
	mu       sync.Mutex
	queue    []*write
	stopped  bool
	taken    uint64              // groups taken so far: the last one's number
	released uint64              // groups whose writes learnt their outcome, in order
	finished map[uint64][]*write // committed groups waiting for earlier ones

	wake chan struct{} // capacity 1
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

// barrier returns once every write handed over before it is committed
// or failed (its outcome, for a rider, handed to its done function). It
// costs no round trip.
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
	for _, w := range ws {
		w.queued = now
	}
	g.mu.Lock()
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
	g.signal()
}

// signal wakes an idle committer.
func (g *writeGroup) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// run commits groups until ctx ends, then what is still queued.
func (g *writeGroup) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range g.committers {
		wg.Go(func() { g.loop(ctx) })
	}
	wg.Wait()
}

func (g *writeGroup) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		n, group, wait := g.take(false)
		if group != nil {
			g.commit(group)
			g.release(n, group)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-g.wake:
		case <-timer.C:
		case <-ctx.Done():
			g.mu.Lock()
			g.stopped = true
			g.mu.Unlock()
			g.signal() // the other committers drain too
			for {
				n, group, _ := g.take(true)
				if group == nil {
					return
				}
				g.commit(group)
				g.release(n, group)
			}
		}
		timer.Stop()
	}
}

// take returns the next group and its number: the writes queued, once
// one is not a rider or the oldest rider waited riderDelay (at once when
// all is set); otherwise how long to wait for that.
func (g *writeGroup) take(all bool) (uint64, []*write, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		return 0, nil, 0
	}
	ready := all
	for _, w := range g.queue {
		ready = ready || !w.rider
	}
	if age := time.Since(g.queue[0].queued); !ready && age < riderDelay {
		return 0, nil, riderDelay - age
	}
	n := min(len(g.queue), maxGroupWrites)
	group := make([]*write, n)
	copy(group, g.queue)
	clear(g.queue[:n])
	g.queue = g.queue[n:]
	if len(g.queue) > 0 {
		g.signal() // more than a group's worth: another committer takes it
	}
	g.taken++
	return g.taken, group, 0
}

// release hands the writes of group number n their outcome once every
// group taken before it has had its own.
func (g *writeGroup) release(n uint64, group []*write) {
	g.mu.Lock()
	if g.finished == nil {
		g.finished = map[uint64][]*write{}
	}
	g.finished[n] = group
	var ready [][]*write
	for {
		next, ok := g.finished[g.released+1]
		if !ok {
			break
		}
		delete(g.finished, g.released+1)
		g.released++
		ready = append(ready, next)
	}
	g.mu.Unlock()
	for _, ws := range ready {
		notify(ws)
	}
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

// commit commits group in one transaction and sets every write's
// outcome. When the server refused a statement (the transaction surely
// did not commit), each write is tried again alone; when the outcome is
// unknown (the connection was lost), every write fails with that error,
// as it would alone: trying again could apply it twice.
func (g *writeGroup) commit(group []*write) {
	var ws []*write
	for _, w := range group {
		if w.fill != nil { // barriers have nothing to write
			ws = append(ws, w)
		}
	}
	switch len(ws) {
	case 0:
		return
	case 1:
		g.try(ws[0].op, ws)
		return
	}
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, func(a, b *write) int { return strings.Compare(a.key, b.key) })
	if committed, refused := g.try(OpGroup, sorted); committed || !refused {
		return
	}
	g.db.log.Debug("group commit refused; committing its writes one by one", zap.Int("writes", len(ws)))
	for _, w := range ws {
		g.try(w.op, []*write{w})
	}
}

// try commits ws in one transaction and sets each write's err: its
// callbacks' first error, or (when the transaction did not commit and the
// write has none) the batch's. It reports whether the transaction
// committed and, if not, whether the server refused it (a statement's
// error or a ROLLBACK), so that nothing of it was applied.
func (g *writeGroup) try(op string, ws []*write) (committed, refused bool) {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), op), groupOpTimeout)
	defer cancel()
	flush := false
	for _, w := range ws {
		flush = flush || w.sync
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if !flush {
		b.Queue(`SET LOCAL synchronous_commit = off`)
	}
	var pe *pgconn.PgError
	for _, w := range ws {
		w.err = nil
		own := &pgx.Batch{}
		w.fill(own)
		for _, q := range own.QueuedQueries {
			if fn := q.Fn; fn != nil {
				// The callback's error is the write's: returned to pgx
				// it would stop the callbacks after it, COMMIT's too.
				q.Fn = func(br pgx.BatchResults) error {
					err := fn(br)
					if err != nil && w.err == nil {
						w.err = err
					}
					refused = refused || errors.As(err, &pe)
					return nil
				}
			}
			b.QueuedQueries = append(b.QueuedQueries, q)
		}
	}
	b.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT"
		refused = refused || !committed
		return nil
	})
	err := g.db.pool.SendBatch(ctx, b).Close()
	if committed {
		return true, false
	}
	refused = refused || errors.As(err, &pe)
	if err == nil {
		err = errRolledBack
	}
	for _, w := range ws {
		if w.err == nil {
			w.err = err
		}
	}
	return false, refused
}

// rowKey names a row for write.key: its table's letter and the columns
// that name it. Rows of different tables never conflict; the order
// between tables only needs to be the same for every group.
func rowKey(table string, id ...string) string {
	return table + "\x00" + strings.Join(id, "\x00")
}

// errRolledBack is a write's error when its transaction did not commit
// without a statement saying why.
var errRolledBack = errors.New("transaction rolled back")

// startWrites starts the DB's group commit; stopWrites (called by Close)
// commits what is queued and stops it.
func (db *DB) startWrites() {
	db.writes = &writeGroup{db: db, committers: groupCommitters, wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.writes.run(ctx)
	}()
	var once sync.Once
	db.stopWrites = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}
