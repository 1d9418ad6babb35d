package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
)

// errClosed is returned by writes made after Close.
var errClosed = errors.New("sqlitestore: database closed")

// lazySyncAfter is how long lazy commits wait for a durable commit to
// make them durable before the writer fsyncs the WAL itself (the files
// journal's background fsync of its marks, pgstore's WAL writer).
const lazySyncAfter = 200 * time.Millisecond

// maxGroup bounds how many writes share one transaction.
const maxGroup = 256

// writeFn is one write: it runs inside the writer's transaction, under a
// savepoint of its own, so its error undoes only its own statements. It
// must be quick and must not call the DB (it would wait for itself).
type writeFn func(tx *wtx) error

type job struct {
	ctx  context.Context
	fn   writeFn
	lazy bool // may commit without the fsync (doLazy)
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
	db    *sql.DB
	stmts *stmtCache
	log   *zap.Logger
	jobs  chan *job
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once

	// sync is the writing connection's synchronous setting: true FULL,
	// false NORMAL (lazy commits). Only the writer goroutine uses it.
	sync bool
	// unsynced: a lazy commit is not fsynced yet (syncWAL).
	unsynced bool
	path     string // the database file; its WAL is path+"-wal"

	commits, fsyncs, writes, failures atomic.Int64
	lastErr                           atomic.Pointer[error]
}

func newWriter(db *sql.DB, path string, log *zap.Logger) *writer {
	w := &writer{db: db, stmts: newStmtCache(db), sync: true, path: path, log: log, jobs: make(chan *job, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// do runs fn in the writer's next transaction and returns when it has
// committed (nil: fn's writes are durable) or failed. A context that ends
// before fn runs cancels it; once fn ran, do waits for the commit.
func (w *writer) do(ctx context.Context, fn writeFn) error { return w.submit(ctx, fn, false) }

// doLazy is do for a write that need not be durable when it returns, only
// committed (visible to every reader, and in the WAL file in the kernel,
// so it survives the death of the process): routine bookkeeping whose
// loss in a crash of the machine costs nothing the files backend does not
// lose too (SPEC §3.7 marks, lazy appends, counters; pgstore commits the
// same writes with synchronous_commit off). It is committed without the
// fsync (synchronous=NORMAL), apart from the durable writes queued beside
// it, and made durable by the next durable commit: the WAL is one file,
// fsynced whole, and read back in order after a crash, so a durable
// commit that returned implies every lazy one before it.
func (w *writer) doLazy(ctx context.Context, fn writeFn) error { return w.submit(ctx, fn, true) }

func (w *writer) submit(ctx context.Context, fn writeFn, lazy bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &job{ctx: ctx, fn: fn, lazy: lazy, done: make(chan error, 1)}
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
	err := w.wait(j)
	var p *jobPanic
	if errors.As(err, &p) {
		panic(p.value) // in the caller's goroutine, where the other backends run fn
	}
	return err
}

// jobPanic is the answer of a job whose fn panicked: its statements are
// rolled back, the writer goes on with the others, and submit panics with
// value in the goroutine that queued the job.
type jobPanic struct {
	value any
	stack []byte
}

func (p *jobPanic) Error() string {
	return fmt.Sprintf("sqlitestore: write panicked: %v\n%s", p.value, p.stack)
}

// runJob runs fn, turning a panic into a *jobPanic: a panic in the writer
// goroutine would end the process, with every write queued beside it.
func runJob(tx *wtx, fn writeFn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &jobPanic{value: v, stack: debug.Stack()}
		}
	}()
	return fn(tx)
}

// wait returns j's answer. The writer answers every job it takes, even
// at close, before it stops; but a job can enter the queue after the
// writer drained it for the last time (close came between submit's check
// of quit and its send, and the send won the select): nothing will take
// it, and it never ran.
func (w *writer) wait(j *job) error {
	select {
	case err := <-j.done:
		return err
	case <-w.done:
		select {
		case err := <-j.done: // answered just before the writer stopped
			return err
		default:
			return errClosed
		}
	}
}

func (w *writer) run() {
	defer close(w.done)
	defer w.stmts.close()
	batch := make([]*job, 0, maxGroup)
	// lazy fires lazySyncAfter after the first lazy commit not yet
	// fsynced; a durable commit before then disarms it.
	lazy := time.NewTimer(time.Hour)
	lazy.Stop()
	defer lazy.Stop()
	armed := false
	for {
		switch {
		case w.unsynced && !armed:
			lazy.Reset(lazySyncAfter)
			armed = true
		case !w.unsynced && armed:
			lazy.Stop()
			armed = false
		}
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case <-lazy.C:
			armed = false
			w.syncWAL()
			continue
		case <-w.quit:
			w.drain()
			w.syncWAL()
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
		w.commitSplit(batch)
		clear(batch)
	}
}

// commitSplit commits the lazy jobs of batch first, without the fsync, and
// answers them; then the others, durably. Jobs of one batch were queued
// concurrently (each caller waits for its job), so their order is free.
func (w *writer) commitSplit(batch []*job) {
	var lazy, durable []*job
	for _, j := range batch {
		if j.lazy {
			lazy = append(lazy, j)
		} else {
			durable = append(durable, j)
		}
	}
	if len(lazy) > 0 {
		w.commit(lazy, false)
	}
	if len(durable) > 0 {
		w.commit(durable, true)
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
		w.commitSplit(batch)
	}
}

// commit runs batch in one transaction, durably (synchronous=FULL: the
// commit fsyncs the WAL) or lazily (NORMAL: no fsync); each job gets its
// own error, or the commit's.
func (w *writer) commit(batch []*job, durable bool) {
	errs := w.commitTx(batch, durable)
	// The connection is free again: prepare what ran unprepared, before
	// the answers (a caller that got its answer sees the cache settled).
	w.stmts.prepareMissed()
	for i, j := range batch {
		j.done <- errs[i]
	}
}

func (w *writer) commitTx(batch []*job, durable bool) []error {
	errs := make([]error, len(batch))
	if err := w.setSync(durable); err != nil {
		return w.failed(batch, err)
	}
	stx, err := w.db.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return w.failed(batch, fmt.Errorf("sqlitestore: begin: %w", err))
	}
	tx := &wtx{Tx: stx, c: w.stmts}
	ran := 0
	var refused error // a job's statement the storage refused (the transaction kept)
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		var lost bool
		lost, errs[i] = w.run1(tx, j.fn)
		if !lost && isIOError(errs[i]) {
			// SQLite rolled back the statement only (SQLITE_FULL with a
			// statement journal, the pager still sound: the page limit):
			// the job failed for want of space all the same, and says so
			// (sessions.ErrStorage), as a lost batch does.
			errs[i] = storageErr(errs[i])
			refused = errs[i]
		}
		if lost {
			// SQLite rolled the whole transaction back (a full disk, an
			// I/O error): the jobs before this one are undone, and the
			// ones after it must not run outside any transaction, each
			// committed on its own while its caller hears of a failure.
			_ = tx.Rollback()
			return w.failed(batch, errs[i])
		}
		if errs[i] == nil {
			ran++
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		_ = tx.Rollback()
		return w.failed(batch, fmt.Errorf("sqlitestore: commit: %w", err))
	}
	w.commits.Add(1)
	switch {
	case ran == 0:
	case durable:
		w.fsyncs.Add(1)
		w.unsynced = false
	default:
		w.unsynced = true
	}
	w.writes.Add(int64(ran))
	if refused != nil {
		w.failures.Add(1)
		w.lastErr.Store(&refused)
		w.log.Warn("sqlite write refused", zap.Error(refused))
	} else {
		var none error
		w.lastErr.Store(&none)
	}
	return errs
}

// run1 runs one job under a savepoint: its failure rolls back its own
// statements only. lost reports that the savepoint is gone: SQLite
// rolled back the whole transaction (after SQLITE_FULL or an I/O error a
// statement may take the transaction with it), or the savepoint could not
// be taken, rolled back to or released; the transaction is then no
// longer the batch's and must not be committed.
func (w *writer) run1(tx *wtx, fn writeFn) (lost bool, err error) {
	// One name serves every job: each job's savepoint is released (or
	// rolled back to and released) before the next job's is taken, and
	// constant statements stay prepared.
	if _, err := tx.Exec("SAVEPOINT job"); err != nil {
		return true, fmt.Errorf("sqlitestore: savepoint: %w", err)
	}
	if err := runJob(tx, fn); err != nil {
		_, rerr := tx.Exec("ROLLBACK TO job")
		if rerr == nil {
			_, rerr = tx.Exec("RELEASE job")
		}
		if rerr != nil {
			var p *jobPanic
			if errors.As(err, &p) {
				// Every job of the batch gets this error: none may panic.
				err = errors.New(p.Error())
			}
			return true, errors.Join(err, fmt.Errorf("sqlitestore: rollback to savepoint: %w", rerr))
		}
		return false, err
	}
	if _, err := tx.Exec("RELEASE job"); err != nil {
		return true, fmt.Errorf("sqlitestore: release savepoint: %w", err)
	}
	return false, nil
}

// syncWAL makes the lazy commits durable when no durable commit came
// after them within lazySyncAfter (or at close): it fsyncs the WAL file
// (fsync flushes a file whatever descriptor names it). A failure is
// logged; the next durable commit or checkpoint fsyncs the WAL anyway.
func (w *writer) syncWAL() {
	if !w.unsynced {
		return
	}
	f, err := os.OpenFile(w.path+"-wal", os.O_RDWR, 0)
	if err == nil {
		err = f.Sync()
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		w.log.Warn("sqlite wal sync failed", zap.Error(err))
		return
	}
	w.unsynced = false
	w.fsyncs.Add(1)
}

// setSync sets the connection's synchronous setting for the next
// transaction: FULL for a durable commit, NORMAL for a lazy one. A
// connection database/sql opened again (after an error) starts at FULL,
// its connection string's: never less durable than w.sync says.
func (w *writer) setSync(full bool) error {
	if w.sync == full {
		return nil
	}
	q := "PRAGMA synchronous = NORMAL"
	if full {
		q = "PRAGMA synchronous = FULL"
	}
	if _, err := w.db.Exec(q); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", q, err)
	}
	w.sync = full
	return nil
}

// failed records a commit's failure: every job of batch gets err.
func (w *writer) failed(batch []*job, err error) []error {
	err = storageErr(err)
	w.failures.Add(1)
	w.lastErr.Store(&err)
	w.log.Warn("sqlite commit failed", zap.Int("writes", len(batch)), zap.Error(err))
	errs := make([]error, len(batch))
	for i := range errs {
		errs[i] = err
	}
	return errs
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
