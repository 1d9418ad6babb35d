package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// AcceptDeferredAll is AcceptDeferred for several records at once (the
// messages of one Telegram getUpdates batch, gathered by the dispatcher):
// one write inserts them in their order (so their seq, the order a
// restart replays them in, is theirs), one round trip and one commit for
// all instead of one each, and one WAL flush behind wait. dups[i] and
// errs[i] are what AcceptDeferred would have answered for recs[i]: a
// record this store cannot hold (checkRecord, a payload that is not JSON)
// is refused alone; a failed write fails every record it carried. wait
// returns once every stored record (and every duplicate's original) is
// durable; it fails, wrapping sessions.ErrStorage, when that cannot be
// known. A batch of one record (a steady trickle of messages, long-polled
// one at a time) is committed with its WAL flush instead: one round trip,
// not a lazy commit and a flush (issue 21), at the cost of its turn
// starting one flush later; wait then has nothing left to do.
func (d *Delivery) AcceptDeferredAll(ctx context.Context, recs []sessions.Record) (dups []bool, errs []error, wait func() error) {
	dups, errs = make([]bool, len(recs)), make([]error, len(recs))
	wait = func() error { return nil }
	rows := make([]acceptArgs, 0, len(recs))
	idx := make([]int, 0, len(recs)) // rows[j] is recs[idx[j]]
	for i, rec := range recs {
		if err := checkRecord(rec); err != nil {
			errs[i] = fmt.Errorf("pgstore: delivery accept: %w", err)
			continue
		}
		payload, err := compactJSON("payload", rec.Payload)
		if err != nil {
			errs[i] = fmt.Errorf("pgstore: delivery accept %q: %w", rec.ID, err)
			continue
		}
		rows = append(rows, acceptArgs{rec: rec, payload: payload})
		idx = append(idx, i)
	}
	if len(rows) == 0 {
		return dups, errs, wait
	}
	failAll := func(err error) {
		for _, i := range idx {
			errs[i] = err
		}
	}
	if err := d.acceptable(ctx); err != nil {
		failAll(err)
		return dups, errs, wait
	}
	now := d.clock()
	sync := len(rows) == 1
	known, err := d.acceptRows(withOp(ctx, OpAccept), rows, now, sync)
	if err != nil {
		if ctx.Err() == nil && !permanent(err) {
			d.mu.Lock()
			d.failLocked("accept", err)
			d.mu.Unlock()
		}
		if permanent(err) {
			failAll(fmt.Errorf("pgstore: delivery accept %d records: %w", len(rows), err))
		} else {
			failAll(fmt.Errorf("pgstore: delivery accept: %w", d.storageErr(err)))
		}
		return dups, errs, wait
	}
	if d.faulted.Load() {
		d.mu.Lock()
		d.healLocked() // a write succeeded: healthy unless marks wait
		d.mu.Unlock()
	}
	anyDup := false
	for j, i := range idx {
		dups[i] = known[j]
		anyDup = anyDup || dups[i]
	}
	if sync && !anyDup {
		return dups, errs, wait // durable already (no Sprintf on this path: most batches at a steady pace)
	}
	what := fmt.Sprintf("%d records", len(rows))
	if sync {
		// A duplicate's original may be a lazy commit not flushed yet:
		// a flush of its own covers it.
		return dups, errs, d.acceptWait(true, 0, what)
	}
	// One flush covers the batch (and, with a duplicate, its original).
	return dups, errs, d.acceptWait(anyDup, d.barrier.note(), what)
}

// acceptArgs is one record of AcceptDeferredAll, its payload compacted.
type acceptArgs struct {
	rec     sessions.Record
	payload string
}

// acceptable refuses an accept on a closed handle, a cancelled ctx, or
// while marks wait after a failed write (an error wrapping
// sessions.ErrStorage).
func (d *Delivery) acceptable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: delivery accept: %w", err)
	}
	if d.isClosed.Load() {
		return fmt.Errorf("pgstore: delivery accept: %w", errClosed)
	}
	if d.faulted.Load() {
		d.mu.Lock()
		d.flushLocked()
		n, failure := len(d.backlog), d.failure
		d.mu.Unlock()
		if n > 0 {
			return fmt.Errorf("pgstore: delivery accept: %d marks wait: %w", n, failure)
		}
	}
	return nil
}

// acceptRows inserts rows in their order in one write through the group
// commit, lazily committed unless sync (then committed with its WAL flush),
// and reports which ids were known (nothing stored for them).
func (d *Delivery) acceptRows(ctx context.Context, rows []acceptArgs, now time.Time, sync bool) ([]bool, error) {
	if d.fault != nil {
		if err := d.fault("accept"); err != nil {
			d.failures.Add(1)
			return nil, err
		}
	}
	dups := make([]bool, len(rows))
	peek := sessions.QueuePeekFrom(ctx)
	var peeks []peeked
	err := d.db.writes.do(ctx, &write{op: OpAccept, key: rowKey("d", rows[0].rec.ID), sync: sync, fill: func(b *pgx.Batch) {
		peeks = peeks[:0]
		for j, r := range rows {
			at := r.rec.AcceptedAt
			if at.IsZero() {
				at = now
			}
			queueAccept(b, peek, r.rec, []any{r.rec.ID, r.rec.AgentID, r.rec.SessionKey, r.payload, r.rec.Starts,
				r.rec.Failures, r.rec.Attempts, r.rec.Consumed, at.UTC(), d.owner}, &dups[j], &peeks)
		}
	}})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		d.failures.Add(1)
		return nil, err
	}
	if len(peeks) > 0 {
		d.deliverPeeks(peek, peeks)
	}
	d.writes.Add(1)
	return dups, nil
}
