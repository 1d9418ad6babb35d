package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// deferredAcceptor is a journal that can accept a record before it is
// durable and wait for durability later (pgstore.Delivery: the waits of a
// batch share one WAL flush).
type deferredAcceptor interface {
	AcceptDeferred(ctx context.Context, rec sessions.Record) (dup bool, wait func() error, err error)
}

// acceptTimeout bounds one journal write of an inbound message.
const acceptTimeout = 30 * time.Second

// accept journals rec. When the adapter acknowledges a batch at once
// (channels.Batch) and the journal can defer durability, the wait joins
// the batch's, which the adapter runs before acknowledging anything: the
// guarantee of SPEC §3.7 (journaled before acknowledged) is kept and the
// batch pays for one flush. Otherwise rec is durable when accept returns.
//
// The write is not cut short when the caller goes away (a webhook client
// that timed out): cancelled after its commit, it would report a failure
// for a stored record that nobody then runs. acceptTimeout bounds it.
func (d *Dispatcher) accept(ctx context.Context, rec sessions.Record) (dup bool, err error) {
	d.flushStaged(ctx) // journaled after what its batch staged before it
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acceptTimeout)
	defer cancel()
	b := channels.BatchFrom(ctx)
	da, ok := d.journal.(deferredAcceptor)
	if b == nil || !ok {
		return d.journal.Accept(ctx, rec)
	}
	dup, wait, err := da.AcceptDeferred(ctx, rec)
	if err != nil {
		return false, err
	}
	if dup {
		b.Defer(wait)
		return true, nil
	}
	// Not a duplicate: the caller queues the work now. Should the wait
	// fail, the sender delivers the message again, but it runs here.
	b.Defer(func() error {
		err := wait()
		if err != nil && rec.ID != "" && d.recovery != nil {
			d.recovery.deferredFailed(rec.ID)
		}
		return err
	})
	return false, nil
}

// inboundRecord is the journal record of w, an inbound message or command
// (its Inbound and history mark in the payload).
func (w *work) inboundRecord() (sessions.Record, error) {
	payload, err := json.Marshal(envelope{Inbound: &w.In, History: w.HistoryMark})
	if err != nil {
		return sessions.Record{}, fmt.Errorf("dispatch: encode inbound: %w", err)
	}
	return sessions.Record{ID: w.RecordID, AgentID: w.AgentID, SessionKey: w.Key.String(),
		Payload: payload, AcceptedAt: w.AcceptedAt}, nil
}
