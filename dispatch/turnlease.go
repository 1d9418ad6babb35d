package dispatch

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// turnLeases runs lane batches under their session's lease on a journal
// several processes share (the notes below), and does the batch surgery
// that needs (turnbatch.go). It holds no state of its own: a turn's hold
// lives in its context (sessions.WithFence).
type turnLeases struct{ d *Dispatcher }

// Per-session serialisation across replicas (issue 13). When the journal
// is shared by several processes (sessions.Turns: PostgreSQL replicas),
// the lanes serialise a session's turns only within this process: each
// batch also begins under the session's lease (BeginTurn). A batch that
// may not run yet (another replica runs the session, or holds an older
// message of it) waits for its turn outside any concurrency slot, before
// the items queued behind it (lanes.Queue.Next), so per-session order
// holds and two replicas waiting on each other's sessions cannot starve
// each other's slots. A batch that loses its lease mid-turn stops: its
// writes are fenced, its records are left to whoever runs the session now.

// turnWaitPoll bounds one wait for a session's lease: releases are
// notified (LISTEN), the poll only covers a notification missed between
// two waits or a lease that expired instead of being released.
var turnWaitPoll = 500 * time.Millisecond

// errLeaseLost is the cause of a turn context cancelled because the
// session's lease was lost.
var errLeaseLost = errors.New("session lease lost")

// run runs b once this process holds its session's lease.
func (tl turnLeases) run(ctx context.Context, t sessions.Turns, b laneBatch) {
	d := tl.d
	agentID, ids, ok := batchScope(b)
	if !ok {
		d.runItems(ctx, b)
		return
	}
	h, err := t.BeginTurn(ctx, agentID, b.Key.String(), ids)
	switch {
	case err == nil:
		rest, done := tl.step(ctx, b, h)
		if done {
			return
		}
		b = rest
	case ctx.Err() != nil && d.closing.Load() && !stoppedForGood(ctx):
		return // shutdown: the records stay pending for the next start
	case ctx.Err() != nil:
		tl.stopped(b) // /stop, interrupt: as a turn cancelled later is
		return
	}
	// Wait for the session outside the slot, before what queued behind.
	if nerr := d.queue.Next(d.life, b.Key, func(ctx context.Context) { tl.awaitTurn(ctx, t, b) }); nerr != nil {
		d.log.Info("shutting down: a batch waiting for its session stays pending", zap.Stringer("session_key", b.Key))
	}
}

// stopped ends b, cancelled (/stop, interrupt mode) before its session's
// lease was granted, as turn.cancelled ends a cancelled turn and /stop
// the work it drops: its messages and commands are finished and waiting
// web clients told; a reply in it is resent (it answers messages already
// run).
func (tl turnLeases) stopped(b laneBatch) {
	d := tl.d
	var ws []*work
	for _, it := range b.Items {
		w, ok := it.Payload.(*work)
		switch {
		case !ok:
		case w.Reply != nil:
			d.outbox.goResend(d.life, *w.Reply)
		default:
			ws = append(ws, expand(w)...)
		}
	}
	d.log.Info("turn cancelled before its session's lease", zap.Stringer("session_key", b.Key))
	d.releaseHolds(ws...)
	d.finish(recordIDs(ws)...)
	d.fails.release(d.life, ws, "Stopped before an answer was ready.")
}

// awaitTurn waits until b's session may run here, then runs it (on the
// lane, outside any slot: lanes.Queue.Next).
func (tl turnLeases) awaitTurn(ctx context.Context, t sessions.Turns, b laneBatch) {
	d := tl.d
	agentID, ids, _ := batchScope(b)
	key := b.Key.String() // sessions.Turns takes the stored form
	log := d.log.With(zap.String("session_key", key))
	start := time.Now()
	for ctx.Err() == nil && !d.closing.Load() {
		t.WaitTurn(ctx, key, turnWaitPoll)
		h, err := t.BeginTurn(ctx, agentID, key, ids)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("waiting for a session's lease failed; retrying", zap.Error(err))
			}
			continue
		}
		if h.Held {
			d.opts.Metrics.LeaseWaits.Observe(time.Since(start).Seconds())
		}
		rest, done := tl.step(ctx, b, h)
		if done {
			return
		}
		b = rest
		_, ids, _ = batchScope(b)
	}
	if ctx.Err() != nil && (!d.closing.Load() || stoppedForGood(ctx)) {
		tl.stopped(b) // /stop (lanes.Queue.Cancel ends a Next fn's wait)
	}
	// Shutdown: the records stay pending for the next start or another
	// replica.
}

// step applies BeginTurn's answer h to b: it drops the work gone to
// another process, runs what may run now under the lease, and returns
// what must wait (the whole batch when h is not held; the work in
// h.Later when it is) and whether nothing does.
func (tl turnLeases) step(ctx context.Context, b laneBatch, h *sessions.TurnHold) (laneBatch, bool) {
	if b = tl.dropGone(ctx, b, h.Gone); len(b.Items) == 0 {
		if h.Held {
			h.End()
		}
		return b, true
	}
	if !h.Held {
		if h.Behind {
			// An older message of the session is this process's and
			// waits in the lane behind this batch: let it run first.
			tl.yieldBatch(b)
			return laneBatch{}, true
		}
		return b, false
	}
	now, later := splitBatch(sortBatch(b, h.Order), h.Later)
	tl.runHeld(ctx, now, h)
	return later, len(later.Items) == 0
}

// runHeld runs b under h, cancelling the turn when the lease is lost.
func (tl turnLeases) runHeld(ctx context.Context, b laneBatch, h *sessions.TurnHold) {
	d := tl.d
	defer h.End()
	ctx, cancel := context.WithCancelCause(sessions.WithFence(ctx, h.Fence))
	defer cancel(nil)
	go func() {
		select {
		case <-h.Lost:
			cancel(errLeaseLost)
		case <-ctx.Done():
		}
	}()
	d.runItems(ctx, b)
}

// leaseLost reports whether ctx ended because its turn's lease was lost,
// or err is a write refused for a lost lease: the turn's records are no
// longer this process's to finish or fail.
func leaseLost(ctx context.Context, err error) bool {
	return errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(err, sessions.ErrFenced)
}

// lostTurn ends a turn whose lease was lost: its records are left pending
// (Abort: not a failure) and run again once this process may run the
// session; if another replica took them over meanwhile, BeginTurn then
// reports them gone and they are dropped here.
func (tl turnLeases) lostTurn(ws []*work, log *zap.Logger) {
	d := tl.d
	log.Warn("turn stopped: the session's lease was lost (this replica paused or lost the database); nothing more written or sent")
	d.opts.Metrics.LeasesLost.Inc()
	_ = d.journal.Abort(recordIDs(ws)...)
	d.later.after(storageRetry, func() { d.fails.requeue(ws) })
}

// leaseLive waits, when ctx carries a turn's fence whose lease may have
// run out unrenewed (the process was stopped, SIGSTOP), until the renewal
// says whether it is still held, and reports that; true without a fence.
// Sending a reply chunk checks it first, so a replica waking up after
// losing its sessions does not send what the new holder sends.
func leaseLive(ctx context.Context) bool {
	f, ok := sessions.FenceFrom(ctx)
	if !ok || f.Live == nil || f.Live() {
		return true
	}
	deadline := time.Now().Add(leaseVerdict)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done(): // the shutdown grace period ended (sendReply's ctx)
			return false
		case <-time.After(50 * time.Millisecond):
		}
		if f.Live() {
			return true
		}
	}
	return false
}

// leaseVerdict bounds leaseLive's wait for a renewal (the renewals run
// every third of the lease's 10 s).
var leaseVerdict = 5 * time.Second
