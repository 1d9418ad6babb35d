package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// A turn's reply stored in the transaction of its answer's append
// (sessions.ReplyAhead, issue 21): the append's write queues Ready's
// statements (and the turn's usage row) after its own, under the same
// fence, so the reply's durable write and its outbox record are one
// commit, one round trip, instead of two. They commit together or not at
// all: an outbox record never exists without its transcript entry, and a
// crash before the commit leaves the transcript without the answer and
// the records pending, as a crash before a plain append does; after it,
// the start finds the reply in the outbox and sends it, as after Ready.

// aheadWrite is a ReplyAhead taken into one append: the Delivery it goes
// to and, for the append's current try, the reply and its statements.
type aheadWrite struct {
	d  *Delivery
	ra *sessions.ReplyAhead

	reply sessions.Reply
	fill  func(b *pgx.Batch)
}

// replyAhead is the ReplyAhead ctx carries for an append of n entries,
// when this DB's Delivery can take it; nil otherwise (the caller then
// stores the reply with Ready). A Delivery with marks waiting in memory
// (an outage) does not take it: Ready would queue it behind them, in
// order, and so does the caller's Ready.
func (db *DB) replyAhead(ctx context.Context, n int) *aheadWrite {
	ra := sessions.ReplyAheadFrom(ctx)
	if ra == nil || n != 1 || ra.Build == nil {
		return nil
	}
	d, ok := ra.Journal.(*Delivery)
	if !ok || d.db != db || d.isClosed.Load() || d.faulted.Load() || d.fault != nil {
		return nil
	}
	return &aheadWrite{d: d, ra: ra}
}

// TakesReplyAhead reports that d stores a sessions.ReplyAhead with the
// append of its database that carries it (sessions.ReplyAheadTaker).
func (d *Delivery) TakesReplyAhead() bool { return true }

// prepare builds the reply of entry entryID and its statements for a try
// of the append; queued is the fence the append checks already. An error
// (a reply or usage row the store refuses) leaves the reply to the
// caller's Ready, which reports it.
func (w *aheadWrite) prepare(entryID string, queued *sessions.Fence) error {
	rp, rows := w.ra.Build(entryID)
	m, err := w.d.readyMark(rp, queued)
	if err != nil {
		return err
	}
	usage, err := usageInsert(rows)
	if err != nil {
		return err
	}
	w.reply = rp
	w.fill = func(b *pgx.Batch) {
		m.queue(b)
		if usage != nil {
			usage(b)
		}
	}
	return nil
}

// committed hands the reply to the caller: stored, its records answered.
func (w *aheadWrite) committed() {
	w.d.writes.Add(1) // the journal's write, as Ready's
	w.d.noteChunks(w.reply)
	w.ra.Take(w.reply)
}

// failed follows an append that failed with err. When the server may
// have committed it all the same (the connection was lost before the
// answer, a result not read back, or the turn's context ended while the
// group commit held the write: it may still commit it), the caller sees a
// failed or cancelled turn, whose records run again or are finished by
// /stop: the reply that may be stored here is removed and its records
// unanswered, through the Delivery's marks (retried in order until the
// server answers), so that no start sends it beside the records' next
// reply, or after a /stop. Where nothing was stored it removes nothing.
func (w *aheadWrite) failed(err error) {
	var pe *pgconn.PgError
	if w.fill == nil || errors.As(err, &pe) {
		return // never prepared, or refused by the server: nothing was stored
	}
	id, records := w.reply.ID, w.reply.Records
	if records == nil {
		records = []string{}
	}
	cond, arg := byID("$2", records)
	m := mark{op: "unready", key: rowKey("d", id), queue: func(b *pgx.Batch) {
		b.Queue(`WITH gone AS (DELETE FROM delivery_replies WHERE id = $1 AND sent = 0)
			UPDATE delivery_records SET reply = NULL WHERE `+cond+` AND reply = $1 AND state = $3`,
			id, arg, statePending)
	}}
	if aerr := w.d.apply(m); aerr != nil {
		w.d.log.Error("reply stored with a failed append not withdrawn; a start may send it beside the records' next reply",
			zap.String("reply_id", id), zap.Error(aerr))
	}
}
