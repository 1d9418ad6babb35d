package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"modernc.org/sqlite"
)

// errClosed is returned by writes made after Close.
var errClosed = errors.New("sqlitestore: database closed")

// maxGroup bounds how many writes share one transaction.
const maxGroup = 256

// writeFn is one write: it runs inside the writer's transaction, under a
// savepoint of its own, so its error undoes only its own statements. It
// must be quick and must not call the DB (it would wait for itself).
type writeFn func(tx *sql.Tx) error

type job struct {
	ctx  context.Context
	fn   writeFn
	done chan error
}

// writer is the one goroutine that writes the database (SQLite has one
// writer at a time; in-process queueing is cheaper than busy retries).
// It takes every write queued while the previous commit was being made
// durable and commits them as one transaction: one fsync of the WAL
// (synchronous=FULL) for the whole group (group commit). A write's do
// returns when its transaction has committed, so it is durable when it
// returns. Owner: the DB; close stops it after the writes already queued
// and waits for it.
type writer struct {
	db   *sql.DB
	log  *zap.Logger
	jobs chan *job
	quit chan struct{}
	done chan struct{}
	once sync.Once

	commits, writes, failures atomic.Int64
	lastErr                   atomic.Pointer[error]
}

func newWriter(db *sql.DB, log *zap.Logger) *writer {
	w := &writer{db: db, log: log, jobs: make(chan *job, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// do runs fn in the writer's next transaction and returns when it has
// committed (nil: fn's writes are durable) or failed. A context that ends
// before fn runs cancels it; once fn ran, do waits for the commit.
func (w *writer) do(ctx context.Context, fn writeFn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case <-w.quit:
		return errClosed
	default:
	}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.quit:
		return errClosed
	}
	return <-j.done // the writer answers every job it takes, even at close
}

func (w *writer) run() {
	defer close(w.done)
	batch := make([]*job, 0, maxGroup)
	for {
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case <-w.quit:
			w.drain()
			return
		}
	more:
		for len(batch) < maxGroup {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		w.commit(batch)
		clear(batch)
	}
}

// drain answers the jobs queued at close: they are still committed (their
// callers were told nothing yet), then the writer stops.
func (w *writer) drain() {
	for {
		var batch []*job
	more:
		for len(batch) < maxGroup {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		if len(batch) == 0 {
			return
		}
		w.commit(batch)
	}
}

// commit runs batch in one transaction; each job gets its own error, or
// the commit's.
func (w *writer) commit(batch []*job) {
	errs := make([]error, len(batch))
	tx, err := w.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		w.fail(batch, fmt.Errorf("sqlitestore: begin: %w", err))
		return
	}
	ran := 0
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		errs[i] = w.run1(tx, i, j.fn)
		if errs[i] == nil {
			ran++
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		_ = tx.Rollback()
		w.fail(batch, fmt.Errorf("sqlitestore: commit: %w", err))
		return
	}
	w.commits.Add(1)
	w.writes.Add(int64(ran))
	var none error
	w.lastErr.Store(&none)
	for i, j := range batch {
		j.done <- errs[i]
	}
}

// run1 runs one job under a savepoint: its failure rolls back its own
// statements only.
func (w *writer) run1(tx *sql.Tx, i int, fn writeFn) error {
	sp := "w" + strconv.Itoa(i)
	if _, err := tx.Exec("SAVEPOINT " + sp); err != nil {
		return fmt.Errorf("sqlitestore: savepoint: %w", err)
	}
	if err := fn(tx); err != nil {
		if _, rerr := tx.Exec("ROLLBACK TO " + sp + "; RELEASE " + sp); rerr != nil {
			return errors.Join(err, fmt.Errorf("sqlitestore: rollback to savepoint: %w", rerr))
		}
		return err
	}
	if _, err := tx.Exec("RELEASE " + sp); err != nil {
		return fmt.Errorf("sqlitestore: release savepoint: %w", err)
	}
	return nil
}

func (w *writer) fail(batch []*job, err error) {
	err = storageErr(err)
	w.failures.Add(1)
	w.lastErr.Store(&err)
	w.log.Warn("sqlite commit failed", zap.Int("writes", len(batch)), zap.Error(err))
	for _, j := range batch {
		j.done <- err
	}
}

// health is the last commit's error (nil after a commit succeeded).
func (w *writer) health() error {
	if p := w.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (w *writer) close() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

// isIOError reports whether err is SQLite saying it could not read or
// write the file (I/O, full disk, locked past the busy timeout, cannot
// open), as opposed to a statement's own error.
func isIOError(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 5, 6, 10, 13, 14: // BUSY, LOCKED, IOERR, FULL, CANTOPEN
		return true
	}
	return false
}
