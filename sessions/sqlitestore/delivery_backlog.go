package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// recoverEvery is how often a Delivery whose database refused a write
// retries the marks it keeps and, with none waiting, probes the database
// with a write of its own (the files journal's retry of its marks,
// pgstore's loop).
var recoverEvery = time.Second

// heldMark is a mark the database refused (a storage failure: a full
// disk, an I/O error, another process's lock held past the busy
// timeout), kept to be written when it takes writes again.
type heldMark struct {
	op    string
	fn    writeFn
	after func() // what follows the mark's commit (counting completions)
}

// backlog is a Delivery's held marks, in the order they were given, and
// the loop that writes them (SPEC §3.7: a mark is never lost while the
// process lives, else the next start sends a delivered reply again). The
// loop runs only while the database refuses writes; it also probes a
// database that refused a write with no mark waiting (a refused Accept),
// so that Health turns nil by itself once it takes writes again. A mark
// given while others are held queues behind them at once, without
// waiting for the database.
type backlog struct {
	held    atomic.Bool // marks wait: a later mark queues behind them
	mu      sync.Mutex  // guards marks, lastErr (never held across a write)
	marks   []heldMark
	lastErr error
	flushMu sync.Mutex            // one flush at a time: the marks go in order
	fault   atomic.Pointer[error] // what Health says while marks wait
	loop    atomic.Bool           // the recovery loop runs
	loopMu  sync.Mutex            // guards closed and loops.Add
	closed  bool                  // wait ran: no loop starts again
	loops   sync.WaitGroup        // the recovery loop, waited by wait
}

// retryable reports whether err says the database refused the write
// (nothing of it was kept) rather than that the write is wrong.
func retryable(err error) bool {
	return errors.Is(err, sessions.ErrStorage) || errors.Is(err, context.DeadlineExceeded)
}

// writeMark runs fn as one lazy job of the writer (writer.doLazy) and
// counts it: the marks are committed, not fsynced, when they return, as
// the files journal's are written to the kernel and pgstore's committed
// with synchronous_commit off; the next durable commit makes them durable.
// A mark the database refuses is held and written, in order, when it
// takes writes again (nil is returned: the mark is the journal's to
// keep); after runs once the mark is committed.
func (d *Delivery) writeMark(op string, fn writeFn, after func()) error {
	m := heldMark{op: op, fn: fn, after: after}
	if d.bl.held.Load() && d.hold(m, nil) {
		return nil
	}
	ctx, cancel := opCtx()
	err := d.db.w.doLazy(ctx, fn)
	cancel()
	if err != nil && retryable(err) {
		d.failures.Add(1)
		d.hold(m, err)
		return nil
	}
	if err := d.count(err); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}

// hold queues m behind the held marks: always when err (the database
// refused m), else only while marks are held (false: none is, write m).
func (d *Delivery) hold(m heldMark, err error) bool {
	d.bl.mu.Lock()
	if err == nil && len(d.bl.marks) == 0 {
		d.bl.mu.Unlock()
		return false
	}
	if err != nil {
		if len(d.bl.marks) == 0 {
			d.log.Error("journal mark not written; kept in memory and retried", zap.String("op", m.op), zap.Error(err))
		}
		d.bl.lastErr = err
	}
	d.bl.marks = append(d.bl.marks, m)
	d.setFaultLocked()
	d.bl.held.Store(true)
	d.bl.mu.Unlock()
	d.recovering()
	return true
}

// flush writes the held marks in order until the database refuses one; a
// mark that fails for another reason is dropped, logged. It reports
// whether marks still wait.
func (d *Delivery) flush() bool {
	d.bl.flushMu.Lock()
	defer d.bl.flushMu.Unlock()
	for {
		d.bl.mu.Lock()
		if len(d.bl.marks) == 0 {
			d.bl.marks, d.bl.lastErr = nil, nil
			if d.bl.held.Swap(false) {
				d.log.Info("held journal marks written; the journal takes writes again")
			}
			d.bl.mu.Unlock()
			return false
		}
		m := d.bl.marks[0]
		d.bl.mu.Unlock()
		ctx, cancel := opCtx()
		err := d.db.w.doLazy(ctx, m.fn)
		cancel()
		d.bl.mu.Lock()
		if err != nil && (retryable(err) || errors.Is(err, errClosed)) {
			d.bl.lastErr = err
			d.setFaultLocked()
			d.bl.mu.Unlock()
			return true
		}
		d.bl.marks = d.bl.marks[1:]
		d.bl.mu.Unlock()
		if err != nil {
			d.failures.Add(1)
			d.log.Error("held journal mark dropped", zap.String("op", m.op), zap.Error(err))
			continue
		}
		d.writes.Add(1)
		if m.after != nil {
			m.after()
		}
	}
}

// recovering starts the recovery loop unless it runs: every recoverEvery
// it writes the held marks and, with none left, probes a database whose
// last commit failed, until both are settled or the database closes.
func (d *Delivery) recovering() {
	d.bl.loopMu.Lock()
	defer d.bl.loopMu.Unlock()
	if d.bl.closed || !d.bl.loop.CompareAndSwap(false, true) {
		return
	}
	d.bl.loops.Add(1)
	go func() {
		defer d.bl.loops.Done()
		t := time.NewTicker(recoverEvery)
		defer t.Stop()
		for {
			select {
			case <-d.db.w.quit:
				d.bl.loop.Store(false)
				return
			case <-t.C:
			}
			if d.flush() {
				continue
			}
			if d.db.w.health() == nil || d.probe() == nil {
				d.bl.loop.Store(false)
				if d.bl.held.Load() { // a mark held as the loop ended
					d.recovering()
				}
				return
			}
		}
	}()
}

// wait returns once the recovery loop has ended (the database closing ends
// it) and keeps it from starting again: Backend.Close leaves no goroutine.
func (d *Delivery) wait() {
	d.bl.loopMu.Lock()
	d.bl.closed = true
	d.bl.loopMu.Unlock()
	d.bl.loops.Wait()
}

// probe proves that the database takes a durable write again: a commit
// that succeeds clears the writer's failure (writer.health).
func (d *Delivery) probe() error {
	ctx, cancel := opCtx()
	defer cancel()
	return d.db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO sequences (name, value) VALUES ('health_probe', 1)
			ON CONFLICT (name) DO UPDATE SET value = value + 1`)
		return err
	})
}

// setFaultLocked records what heldErr reports for the marks held now.
func (d *Delivery) setFaultLocked() {
	err := fmt.Errorf("%w: %d journal marks waiting: %w", sessions.ErrStorage, len(d.bl.marks), d.bl.lastErr)
	d.bl.fault.Store(&err)
}

// heldErr is the fault of the held marks, nil when none waits. It never
// waits for a flush in progress.
func (d *Delivery) heldErr() error {
	if !d.bl.held.Load() {
		return nil
	}
	if p := d.bl.fault.Load(); p != nil {
		return *p
	}
	return sessions.ErrStorage
}

// flushHeld writes the held marks once more (at close); the error says
// how many could not be.
func (d *Delivery) flushHeld() error {
	if !d.bl.held.Load() || !d.flush() {
		return nil
	}
	d.bl.mu.Lock()
	defer d.bl.mu.Unlock()
	return fmt.Errorf("sqlitestore: delivery close: %d journal marks could not be written: %w", len(d.bl.marks), d.bl.lastErr)
}
