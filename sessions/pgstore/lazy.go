package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Lazy commits. Some writes are routine bookkeeping whose loss in a crash
// of the database server costs nothing the files backend does not lose
// too: counters (the files backend coalesces them in memory for up to a
// second, SPEC §3.3), the origin fields and lastInteractionAt of a fresh
// session, a turn's inputs (the files backend writes them to the kernel
// without an fsync; the ingress journal holds them durably and the turn's
// reply, a synchronous commit, flushes the WAL past them). They commit with
// synchronous_commit off: committed and visible to every connection when
// the call returns, surviving the death of this process, flushed by the
// server's WAL writer within wal_writer_delay (200 ms by default) or by the
// next synchronous commit of any session, whichever comes first (the WAL is
// one stream, flushed in order). Only a crash of the server (or its
// machine) in that window loses them, and never out of order: a later
// synchronous commit that returned implies every earlier lazy one is
// durable. The cost saved is the wait for the WAL flush, the larger part of
// a small write's latency on a disk shared with other work.

// lazyBatch wraps statements queued by fill in one transaction committed
// with synchronous_commit off; BEGIN and COMMIT travel in the same batch,
// so it costs one round trip. fill's queued queries may carry result
// callbacks (QueryRow, Exec); the first error, from a statement or a
// callback, is returned.
func (db *DB) lazyBatch(ctx context.Context, fill func(b *pgx.Batch)) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	fill(b)
	b.Queue(`COMMIT`)
	return db.pool.SendBatch(ctx, b).Close()
}

// walBarrier makes lazy commits durable on demand: Wait returns once the
// WAL is flushed past every lazy commit noted before it was called. One
// synchronous commit serves every waiter that arrives while none is in
// flight, so a batch of N lazy accepts costs one flush, not N.
type walBarrier struct {
	db     *DB
	issued atomic.Uint64 // lazy commits noted so far

	// mu serialises barriers and guards flushed; it is held across the
	// barrier's round trip on purpose: a waiter arriving meanwhile needs
	// a flush that starts after its commit, and the next barrier
	// (issued once this one is done) covers every such waiter at once.
	mu      sync.Mutex
	flushed uint64 // lazy commits known durable

	flushes atomic.Int64 // barriers run (tests, benchmarks)
}

// note records one lazy commit that has returned and gives its ticket.
func (w *walBarrier) note() uint64 { return w.issued.Add(1) }

// pending reports whether lazy commits may wait for their flush.
func (w *walBarrier) pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushed < w.issued.Load()
}

// wait returns once the commit with ticket n is durable.
func (w *walBarrier) wait(ctx context.Context, n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flushed >= n {
		return nil
	}
	target := w.issued.Load() // every commit up to target returned before the barrier starts
	w.flushes.Add(1)
	if err := w.db.flushWAL(ctx); err != nil {
		return err
	}
	w.flushed = max(w.flushed, target)
	return nil
}

// flushWAL commits a transaction that has an id (pg_current_xact_id
// assigns one) with the connection's synchronous_commit, as Accept's
// commit: its commit waits for the WAL flush (and any synchronous standby
// the server is configured with) up to its own commit record, which comes
// after every commit that returned before it started, lazy ones included.
func (db *DB) flushWAL(ctx context.Context) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_current_xact_id()`)
	b.Queue(`COMMIT`)
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("flush wal: %w", err)
	}
	return nil
}

// noRows turns pgx.ErrNoRows from a batch callback into *none = true:
// an error out of a batch makes pgx drop its statements from the cache.
func noRows(err error, none *bool) error {
	if errors.Is(err, pgx.ErrNoRows) {
		*none = true
		return nil
	}
	return err
}
