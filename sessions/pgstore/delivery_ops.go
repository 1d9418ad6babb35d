package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Accept stores rec durably (committed when it returns). dup is true, and
// nothing is written, when the id is pending or was completed recently
// (sessions.DoneRetention, DoneKeep). While marks wait after a failed
// write, Accept refuses with an error wrapping sessions.ErrStorage.
func (d *Delivery) Accept(ctx context.Context, rec sessions.Record) (dup bool, err error) {
	return d.accept(ctx, rec, false)
}

// AcceptDeferred is Accept for an adapter that acknowledges a batch of
// messages at once (channels.Batch): the record is committed when it
// returns (visible to every replica, surviving the death of this process,
// claimed like any other) but without waiting for its WAL flush; wait
// returns once it is durable, and fails, wrapping sessions.ErrStorage, when
// that cannot be known. The waits of records accepted together share one
// flush (see lazy.go), so a batch of N messages costs N quick commits and
// one flush instead of N flushes. A duplicate's wait flushes on its own:
// the original may be a lazy commit whose wait has not run yet (rare:
// duplicates are redeliveries).
func (d *Delivery) AcceptDeferred(ctx context.Context, rec sessions.Record) (dup bool, wait func() error, err error) {
	dup, err = d.accept(ctx, rec, true)
	if err != nil {
		return false, func() error { return nil }, err
	}
	var n uint64
	if !dup {
		n = d.barrier.note()
	}
	return dup, d.acceptWait(dup, n, fmt.Sprintf("%q", rec.ID)), nil
}

// acceptWait is the wait of a deferred accept (what names the records
// accepted, for its error): the flush barrier n, or, when flush, a WAL
// flush of its own (a duplicate's original may be a lazy commit whose
// wait has not run yet: one flush covers it).
func (d *Delivery) acceptWait(flush bool, n uint64, what string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(withOp(context.Background(), OpAcceptWait), deliveryOpTimeout)
		defer cancel()
		var err error
		if flush {
			err = d.db.flushWAL(ctx)
		} else {
			err = d.barrier.wait(ctx, n)
		}
		if err != nil {
			return fmt.Errorf("pgstore: delivery accept %s: %w", what, d.storageErr(err))
		}
		return nil
	}
}

func (d *Delivery) accept(ctx context.Context, rec sessions.Record, lazy bool) (dup bool, err error) {
	ctx = withOp(ctx, OpAccept)
	if err := checkRecord(rec); err != nil {
		return false, fmt.Errorf("pgstore: delivery accept: %w", err)
	}
	payload, err := compactJSON("payload", rec.Payload)
	if err != nil {
		return false, fmt.Errorf("pgstore: delivery accept %q: %w", rec.ID, err)
	}
	if err := d.acceptable(ctx); err != nil {
		return false, err
	}
	now := d.clock()
	at := rec.AcceptedAt
	if at.IsZero() {
		at = now
	}
	err = d.acceptRow(ctx, rec, payload, at.UTC(), now, lazy)
	if errors.Is(err, pgx.ErrNoRows) && !lazy && d.barrier.pending() {
		// The original may be a lazy commit not flushed yet: a
		// duplicate is acknowledged only once the original is durable.
		err = d.db.flushWAL(ctx)
		if err == nil {
			return true, nil
		}
	} else if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		if ctx.Err() == nil && !permanent(err) {
			d.mu.Lock()
			d.failLocked("accept", err)
			d.mu.Unlock()
		}
		if permanent(err) {
			return false, fmt.Errorf("pgstore: delivery accept %q: %w", rec.ID, err)
		}
		return false, fmt.Errorf("pgstore: delivery accept: %w", d.storageErr(err))
	}
	if d.faulted.Load() {
		d.mu.Lock()
		d.healLocked() // a write succeeded: healthy unless marks wait
		d.mu.Unlock()
	}
	return false, nil
}

// acceptSQL inserts a record; no row back means the id is known.
const acceptSQL = `INSERT INTO delivery_records
	(id, seq, agent_id, session_key, payload, starts, failures, attempts, consumed, accepted_at, owner, lease_until)
	VALUES ($1, nextval('delivery_seq'), $2, $3, $4, $5, $6, $7, $8, $9, $10, ` + rowLease + `)
	ON CONFLICT (id) DO NOTHING RETURNING seq`

// acceptRow inserts the record, lazily committed if lazy (lazy.go);
// pgx.ErrNoRows means the id is known.
func (d *Delivery) acceptRow(ctx context.Context, rec sessions.Record, payload string, at, now time.Time, lazy bool) error {
	if d.fault != nil {
		if err := d.fault("accept"); err != nil {
			d.failures.Add(1)
			return err
		}
	}
	args := []any{rec.ID, rec.AgentID, rec.SessionKey, payload, rec.Starts, rec.Failures, rec.Attempts, rec.Consumed,
		at, d.owner}
	var dupErr bool
	peek := sessions.QueuePeekFrom(ctx)
	var peeks []peeked
	// Through the group commit (writegroup.go): accepts arriving together
	// (webhook posts) share a round trip. Accept's commit waits for its WAL
	// flush; AcceptDeferred's is lazy (lazy.go). ErrNoRows is answered
	// inside the callback: an error out of a batch makes pgx drop the
	// statements from its cache.
	err := d.db.writes.do(ctx, &write{op: OpAccept, key: rowKey("d", rec.ID), sync: !lazy, fill: func(b *pgx.Batch) {
		peeks = peeks[:0]
		queueAccept(b, peek, rec, args, &dupErr, &peeks)
	}})
	if err == nil && len(peeks) > 0 {
		d.deliverPeeks(peek, peeks)
	}
	if err == nil && dupErr {
		err = pgx.ErrNoRows
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		d.failures.Add(1)
		return err
	}
	d.writes.Add(1)
	return err
}

// storageErr wraps a failed write in sessions.ErrStorage.
func (d *Delivery) storageErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", sessions.ErrStorage, d.db.target, err)
}

// Start records that a turn begins for ids (Starts+1). The mark rides
// with the next write of the DB (the turn's Begin), so it costs no round
// trip of its own and is committed once that write returns
// (writegroup.go); a mark that cannot be written waits in memory like the
// others.
func (d *Delivery) Start(ids ...string) error {
	if ids = validIDs(ids); len(ids) == 0 {
		return nil
	}
	return d.applyLater(d.countMark("start", `starts = starts + 1`, ids), false)
}

// Fail records that a turn for ids failed and leaves them pending
// (Failures+1).
func (d *Delivery) Fail(ids ...string) error {
	return d.count("fail", `failures = failures + 1`, ids)
}

// Abort records that a turn for ids stopped for a shutdown: not a death
// (Starts-1, never below 0).
func (d *Delivery) Abort(ids ...string) error {
	return d.count("abort", `starts = GREATEST(starts - 1, 0)`, ids)
}

// count applies set (a constant of this file) to the pending records ids.
func (d *Delivery) count(op, set string, ids []string) error {
	if ids = validIDs(ids); len(ids) == 0 {
		return nil
	}
	return d.apply(d.countMark(op, set, ids))
}

// countMark is the mark applying set to the pending records ids.
func (d *Delivery) countMark(op, set string, ids []string) mark {
	// Only this handle's: a record another handle took over (this one
	// stopped, and lost it) is that handle's to count.
	cond, arg := byID("$1", ids)
	q := `UPDATE delivery_records SET ` + set + ` WHERE ` + cond + ` AND state = $3 AND owner = $2`
	return mark{op: op, key: rowKey("d", ids[0]), queue: func(b *pgx.Batch) { b.Queue(q, arg, d.owner, statePending) }}
}

// statePending is a pending record's state, passed as a parameter to the
// marks that find records by id or reply: with 'pending' written in the
// statement, its generic plan (writegroup_pools.go) may scan a partial
// index of the pending records (delivery_records_session_pending, and
// delivery_records_pending before migration 00030) for the one record,
// and does when the plan is made while the table is small: every mark
// then read every pending record, quadratic in a backlog (issue 21:
// auto_explain in cmd/gateway-bench). A parameter cannot match a partial index's
// predicate in a generic plan, so the plan looks records up by key.
const statePending = "pending"

// byID is the condition selecting records by ids through parameter p,
// and p's value. One id is compared as a scalar: a generic plan counts ten
// elements in an array parameter, so id = ANY($1) costs ten probes of the
// primary key and, in a table still small when it was planned, a
// sequential scan looks cheaper (and stays in the plan as the table grows).
func byID(p string, ids []string) (cond string, arg any) {
	if len(ids) == 1 {
		return "id = " + p, ids[0]
	}
	return "id = ANY(" + p + ")", ids
}

// doneSet finishes records: their id is remembered as done, their payload
// dropped. $1 selects them (by id or by the reply answering them).
const doneSet = `state = 'done', done_at = $2, done_seq = nextval('delivery_seq'), payload = NULL,
	reply = NULL, lease_until = NULL`

// Done finishes ids without a reply (dropped, cancelled, given up).
func (d *Delivery) Done(ids ...string) error {
	if ids = validIDs(ids); len(ids) == 0 {
		return nil
	}
	d.adopted.forget(adoptedRecords, ids...)
	at := d.clock()
	return d.apply(mark{op: "done", key: rowKey("d", ids[0]), queue: func(b *pgx.Batch) {
		cond, arg := byID("$1", ids)
		b.Queue(`UPDATE delivery_records SET `+doneSet+` WHERE `+cond+` AND state = $4 AND owner = $3`,
			arg, at, d.owner, statePending)
	}})
}

// queueComplete retires reply id if all its chunks are sent, finishing
// the records it still answers (finishAnswered).
func queueComplete(b *pgx.Batch, id string, at time.Time) {
	b.Queue(`WITH fin AS (DELETE FROM delivery_replies WHERE id = $1 AND sent >= n_chunks RETURNING records), `+
		finishAnswered, id, at, statePending)
}

// finishAnswered ends a statement whose CTE fin deleted reply $1 (returning
// its records): it finishes the pending records the reply still answers,
// those of its records whose reply it is, as the files journal's
// completion picks them (doneSet, done_at $2, state $3). They are found
// by id through the primary key, not by reply: migration 00024 drops the
// index on reply so that Ready's update of a record (reply, owner,
// lease_until) changes no indexed column and is heap-only (issue 21). The
// first record is compared as a scalar, the others (a turn that answered
// several messages) as an array behind a one-time filter, so a reply of
// one record never runs that scan: a generic plan counts ten elements in
// an array, and planned while the table was small it reads the table
// instead of probing the key ten times (byID).
const finishAnswered = `rest AS (
		UPDATE delivery_records SET ` + doneSet + `
		WHERE id = ANY((SELECT records[2:] FROM fin)::text[]) AND reply = $1 AND state = $3
			AND (SELECT cardinality(records) FROM fin) > 1)
	UPDATE delivery_records SET ` + doneSet + `
		WHERE id = (SELECT records[1] FROM fin) AND reply = $1 AND state = $3`

// Ready stores a reply before its first chunk is sent, in one transaction:
// its records are answered by it from now on (no longer Pending, done when
// the last chunk is marked Sent), and the draft it takes over is retired.
// A reply with the id of a stored one replaces it.
func (d *Delivery) Ready(r sessions.Reply) (err error) {
	m, err := d.readyMark(r, nil)
	if err != nil {
		return err
	}
	d.noteChunks(r)
	defer func() {
		if err != nil { // refused (fenced, closed): no Sent will come for it
			d.chunks.Delete(r.ID)
		}
	}()
	return d.apply(m)
}

// readyMark is Ready's mark storing r. Under a turn's session lease it
// checks the lease's fence first, unless the transaction checks that
// very fence already (queued, as a transcript append queues its own:
// reply_ahead.go).
func (d *Delivery) readyMark(r sessions.Reply, queued *sessions.Fence) (mark, error) {
	if err := checkReply(r); err != nil {
		return mark{}, fmt.Errorf("pgstore: delivery ready: %w", err)
	}
	target, err := compactJSON("target", r.Target)
	if err != nil {
		return mark{}, fmt.Errorf("pgstore: delivery ready %q: %w", r.ID, err)
	}
	chunks, err := json.Marshal(r.Chunks)
	if err != nil {
		return mark{}, fmt.Errorf("pgstore: delivery ready %q: chunks: %w", r.ID, err)
	}
	now := d.clock()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	records := r.Records
	if records == nil {
		records = []string{}
	}
	tok, fencedTurn := d.fences.Load(SessionLease(r.SessionKey))
	var settles []string
	if fencedTurn {
		settles = records
	}
	fence := sessions.Fence{Lease: SessionLease(r.SessionKey)}
	if fencedTurn {
		fence.Token = tok.(int64)
	}
	checked := queued != nil && queued.Lease == fence.Lease && queued.Token == fence.Token
	return mark{op: "ready", key: rowKey("d", r.ID), records: settles, queue: func(b *pgx.Batch) {
		if fencedTurn && !checked {
			// A turn's reply: written only while its lease is this
			// handle's (turns.go).
			queueFence(b, fence)
		}
		if r.Draft != "" {
			b.Queue(`DELETE FROM delivery_drafts WHERE id = $1`, r.Draft)
		}
		// The reply and the records it answers in one statement (issue
		// 21: a statement fewer per message). Its records are this
		// handle's. Under the session's lease (checked above) they are
		// even when another handle took them over meanwhile (this one's
		// owner lock connection dropped while it lived): the lease holder
		// is the one that runs the session, and an answered record is no
		// one else's to run.
		cond, arg := byID("$15", records)
		b.Queue(`WITH reply AS (INSERT INTO delivery_replies
			(id, seq, records, agent_id, session_key, target, chunks, n_chunks, sent, entry_id, draft, created_at, owner, lease_until)
			VALUES ($1, nextval('delivery_seq'), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, `+rowLease+`)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, records = excluded.records,
				agent_id = excluded.agent_id, session_key = excluded.session_key, target = excluded.target,
				chunks = excluded.chunks, n_chunks = excluded.n_chunks, sent = excluded.sent,
				entry_id = excluded.entry_id, draft = excluded.draft, created_at = excluded.created_at,
				owner = excluded.owner, lease_until = excluded.lease_until)
			UPDATE delivery_records SET reply = $1, owner = $12, lease_until = `+rowLease+`
				WHERE `+cond+` AND state = $14 AND (owner = $12 OR $13)`,
			r.ID, records, r.AgentID, r.SessionKey, target, string(chunks), len(r.Chunks), r.Sent,
			r.EntryID, r.Draft, r.CreatedAt.UTC(), d.owner, fencedTurn, statePending, arg)
		if r.Sent >= len(r.Chunks) {
			queueComplete(b, r.ID, now)
		}
	}}, nil
}

// releasedOwner is the owner a released record is given: no handle's, so
// never live, and the first handle to look for orphans (this one too)
// takes it over and runs it.
func releasedOwner(owner string) string { return "released/" + owner }

// releaseMark gives the pending, unanswered records ids that are still
// this handle's to no one, at once claimable (Orphans): written in place
// of a turn's reply the server refused after it waited in memory, whose
// records the dispatcher has let go. Their reply may have been sent: the
// run they get is within the documented window of a send whose mark was
// lost.
func (d *Delivery) releaseMark(ids []string) mark {
	at := d.clock()
	return mark{op: "release", key: rowKey("d", ids[0]), queue: func(b *pgx.Batch) {
		cond, arg := byID("$1", ids)
		b.Queue(`UPDATE delivery_records SET owner = $2, lease_until = $3
			WHERE `+cond+` AND state = $5 AND reply IS NULL AND owner = $4`,
			arg, releasedOwner(d.owner), at, d.owner, statePending)
	}}
}

// Sent records that the platform accepted the first n chunks of reply id;
// when that is all of them the reply and its records are done in the same
// transaction. An unknown id is ignored.
//
// The mark of a reply's last chunk (of a reply this handle stored or took
// over) goes to the server at once, with the next group of lazy writes (an
// urgent rider, writegroup.go), and Sent returns without waiting for its
// commit (issue 21: the wait was an eighth of a turn on PostgreSQL, holding
// the session's lane and a turn slot). Nothing is sent after it before it
// lands: every later send of this process follows a write that waits for
// the riders handed over before it (a reply's Ready, a draft), so a crash
// still repeats at most the last thing sent to a chat. A mark with chunks
// still to send is waited for: the next chunk goes out right after it, and
// a mark lost behind it would send both again (the crash test caught
// that). This handle's reads that could see the reply (Replies, Pending,
// Stats) wait for the marks handed over before them (writegroup.barrier),
// Close writes them before it releases its rows, and other handles take
// none of this one's rows while it lives (its owner lock and leases).
func (d *Delivery) Sent(id string, n int) error {
	if sessions.CheckID("reply", id) != nil {
		return nil
	}
	at := d.clock()
	d.taken.sent(id, n) // sent (or given up) whether or not the mark is written
	m := mark{op: "sent", key: rowKey("d", id), queue: func(b *pgx.Batch) {
		b.Queue(sentSQL, id, at, statePending, n)
	}}
	if chunks, ok := d.chunks.Load(id); ok && n >= chunks.(int) {
		d.chunks.Delete(id)
		return d.applyLater(m, true)
	}
	return d.apply(m)
}

// noteChunks remembers how many chunks the replies rs have, for Sent.
func (d *Delivery) noteChunks(rs ...sessions.Reply) {
	for _, r := range rs {
		d.chunks.Store(r.ID, len(r.Chunks))
	}
}

// sentSQL is Sent's mark in one statement (issue 21: it was three): a
// reply that is not all sent yet counts its chunks sent ($4); one that is
// is deleted instead and the records it answers are done
// (finishAnswered: done_at $2, state $3). Both halves read the reply's
// row as the statement found it (after waiting for a concurrent writer of
// it, with its WHERE checked again on the new row), so exactly one
// applies.
const sentSQL = `WITH more AS (
		UPDATE delivery_replies SET sent = GREATEST(sent, $4) WHERE id = $1 AND GREATEST(sent, $4) < n_chunks),
	fin AS (
		DELETE FROM delivery_replies WHERE id = $1 AND GREATEST(sent, $4) >= n_chunks RETURNING records), ` +
	finishAnswered

// checkRecord refuses a record whose id or text fields PostgreSQL text
// cannot hold unchanged.
func checkRecord(rec sessions.Record) error {
	if err := sessions.CheckID("record", rec.ID); err != nil {
		return err
	}
	return checkText(rec.ID, "agent id", rec.AgentID, "session key", rec.SessionKey)
}

func checkReply(r sessions.Reply) error {
	if err := sessions.CheckID("reply", r.ID); err != nil {
		return err
	}
	for _, id := range r.Records {
		if err := sessions.CheckID("record", id); err != nil {
			return err
		}
	}
	if r.Draft != "" {
		if err := sessions.CheckID("draft", r.Draft); err != nil {
			return err
		}
	}
	return checkText(r.ID, "agent id", r.AgentID, "session key", r.SessionKey, "entry id", r.EntryID)
}

// checkText checks name/value pairs of owner's text fields: valid UTF-8
// without NUL.
func checkText(owner string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		v := pairs[i+1]
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%q: %s %q is not valid UTF-8 without NUL bytes", owner, pairs[i], v)
		}
	}
	return nil
}

// storableText reports whether every value can be a PostgreSQL text
// value (valid UTF-8 without NUL); one that cannot names nothing stored,
// so a lookup answers "no such" without a query the server would refuse.
func storableText(vs ...string) bool {
	for _, v := range vs {
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return false
		}
	}
	return true
}

// validIDs keeps the ids that can name a stored record (others were
// refused by Accept, so they name nothing).
func validIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if sessions.CheckID("record", id) == nil {
			out = append(out, id)
		}
	}
	return out
}

// compactJSON is raw as the files journal stores it (encoding/json's
// encoding of a RawMessage: compacted, HTML characters escaped, "null" when
// empty); an error names what is not JSON.
func compactJSON(what string, raw json.RawMessage) (string, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return "", fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	return string(b), nil
}
