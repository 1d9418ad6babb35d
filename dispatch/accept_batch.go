package dispatch

import (
	"context"
	"errors"
	"sync"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// batchAcceptor is a journal that accepts several records in one write
// (pgstore.Delivery: the messages of a Telegram getUpdates batch in one
// round trip and one commit, instead of one each, while the poller takes
// the next update).
type batchAcceptor interface {
	AcceptDeferredAll(ctx context.Context, recs []sessions.Record) (dups []bool, errs []error, wait func() error)
}

// An adapter that acknowledges a batch at once (channels.Batch) lets the
// Handler return before what it accepted is durable. With a batchAcceptor
// journal the Handler goes further: a message's record is staged, and the
// batch's staged records are accepted together, in their order, when the
// adapter waits for the batch (or sooner: see flushStaged); each message's
// outcome (duplicate, refused, queued) is then settled in that order. A
// failed accept fails the batch's wait, so the adapter acknowledges none of
// it and fetches it again (what was stored comes back as duplicates).

// staged is the records a batch's messages wait to be accepted with.
type staged struct {
	mu    sync.Mutex
	items []stagedAccept
	done  bool
	err   error // the flush's, for the batch's wait
}

// stagedAccept is one message waiting in a staged batch.
type stagedAccept struct {
	ctx context.Context
	w   *work
	rec sessions.Record
}

// maxStaged bounds the records of one staged write (a Telegram batch is at
// most 100 updates).
const maxStaged = 128

// stage stages rec (w's record) in ctx's batch and reports whether it did:
// false when ctx has no batch or the journal accepts one record at a time.
func (d *Dispatcher) stage(ctx context.Context, w *work, rec sessions.Record) bool {
	b := channels.BatchFrom(ctx)
	if b == nil {
		return false
	}
	if _, ok := d.journal.(batchAcceptor); !ok {
		return false
	}
	for {
		v, loaded := d.staging.LoadOrStore(b, &staged{})
		s := v.(*staged)
		if !loaded {
			b.Defer(func() error { return d.flushStage(b, s) })
		}
		s.mu.Lock()
		if s.done { // flushed meanwhile: a new one takes rec
			s.mu.Unlock()
			continue
		}
		s.items = append(s.items, stagedAccept{ctx: ctx, w: w, rec: rec})
		full := len(s.items) >= maxStaged
		s.mu.Unlock()
		if full {
			_ = d.flushStage(b, s)
		}
		return true
	}
}

// flushStaged accepts and settles what ctx's batch staged so far. Whatever
// acts on a message at once (/stop, an edit or reaction, a chat's move) and
// every accept of a record one at a time call it first, so that what came
// before in the batch is queued, or journaled, first.
func (d *Dispatcher) flushStaged(ctx context.Context) {
	b := channels.BatchFrom(ctx)
	if b == nil {
		return
	}
	if v, ok := d.staging.Load(b); ok {
		_ = d.flushStage(b, v.(*staged)) // its error reaches the batch's wait
	}
}

// flushStage accepts s's records in one write and settles each message as
// Handle would have (accepted): the refusals and the durability wait make
// the error the batch's wait returns. It runs once; later calls return its
// error.
func (d *Dispatcher) flushStage(b *channels.Batch, s *staged) error {
	d.staging.CompareAndDelete(b, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return s.err
	}
	s.done = true
	items := s.items
	s.items = nil
	if len(items) == 0 {
		return nil
	}
	recs := make([]sessions.Record, len(items))
	for i, it := range items {
		recs[i] = it.rec
	}
	ctx, cancel := context.WithTimeout(context.Background(), acceptTimeout)
	defer cancel()
	dups, errs, wait := d.journal.(batchAcceptor).AcceptDeferredAll(d.peekQueues(ctx, items), recs)
	var failed []error
	for i, it := range items {
		err := d.accepted(it.ctx, it.w, dups[i], errs[i])
		if err != nil && !errors.Is(err, channels.ErrRejected) {
			failed = append(failed, err)
		}
	}
	if err := wait(); err != nil {
		// Should the wait fail, the sender delivers these messages again,
		// but they run here already (heldUnsure).
		for i, it := range items {
			if errs[i] == nil && !dups[i] && it.rec.ID != "" && d.recovery != nil {
				d.recovery.deferredFailed(it.rec.ID)
			}
		}
		failed = append(failed, err)
	}
	s.err = errors.Join(failed...)
	return s.err
}
