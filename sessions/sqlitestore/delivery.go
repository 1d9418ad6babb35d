package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// deliveryTimeout bounds each Delivery method whose signature
// (sessions.Delivery's) carries no context.
const deliveryTimeout = 30 * time.Second

// pruneEvery is how many completions pass between two prunings of the
// done ids kept for duplicate detection.
const pruneEvery = 1000

// Delivery is the ingress journal, reply outbox and drafts (SPEC §3.7)
// in the journal, outbox and drafts tables. Every write is one job of the
// writer. Accept is durable when it returns (synchronous=FULL), before the
// channel is acknowledged; the marks (Start, Fail, Abort, Done, Ready,
// Sent, Draft, DraftDone) are committed when they return, surviving the
// death of the process, and durable with the next durable commit or
// within lazySyncAfter (writer.doLazy): the files journal's guarantee for
// its marks, which it writes to the kernel and fsyncs shortly after. A
// mark the database refuses (a full disk, an I/O error, a lock held past
// the busy timeout) is held in memory and written in order when it takes
// writes again, as the files journal keeps its marks (delivery_backlog.go).
// A Delivery is one process's handle: the records
// and drafts it wrote are in its caller's hands, and Pending and Drafts
// return those of earlier handles (a process that died or stopped). It
// starts a goroutine only while the database refuses writes, and is safe
// for concurrent use.
type Delivery struct {
	db    *DB
	log   *zap.Logger
	owner string
	bl    backlog // marks the database refused, until it takes them

	writes, failures atomic.Int64
	done             atomic.Int64 // completions since the last pruning
}

var (
	_ sessions.Delivery    = (*Delivery)(nil)
	_ sessions.AcceptProbe = (*Delivery)(nil)
)

// Delivery returns a new handle on the journal (one per process).
func (db *DB) Delivery() *Delivery {
	return &Delivery{db: db, log: db.log.With(zap.String("part", "delivery")), owner: uuid.NewString()}
}

// write runs fn as one durable job of the writer and counts it.
func (d *Delivery) write(ctx context.Context, fn writeFn) error {
	err := d.db.w.do(ctx, fn)
	if err != nil && retryable(err) {
		d.recovering() // Health turns nil by itself once writes pass again
	}
	return d.count(err)
}

func (d *Delivery) count(err error) error {
	if err != nil {
		d.failures.Add(1)
		return err
	}
	d.writes.Add(1)
	return nil
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), deliveryTimeout)
}

// Accept records rec durably; dup is true when its id is already stored
// (pending, answered or done within the retention).
func (d *Delivery) Accept(ctx context.Context, rec sessions.Record) (dup bool, err error) {
	if err := sessions.CheckID("record", rec.ID); err != nil {
		return false, fmt.Errorf("sqlitestore: accept: %w", err)
	}
	payload := string(rec.Payload)
	if payload == "" {
		payload = "null"
	}
	if !json.Valid([]byte(payload)) {
		return false, fmt.Errorf("sqlitestore: accept %q: payload is not JSON", rec.ID)
	}
	at := rec.AcceptedAt
	if at.IsZero() {
		at = d.db.clock()
	}
	err = d.write(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`INSERT INTO journal (id, agent_id, session_key, payload, starts, failures, attempts, consumed,
			accepted_at, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			rec.ID, rec.AgentID, rec.SessionKey, payload, rec.Starts, rec.Failures, rec.Attempts, rec.Consumed,
			toNanos(at.UTC()), d.owner)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		dup = n == 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlitestore: accept %q: %w", rec.ID, err)
	}
	return dup, nil
}

// Stored implements sessions.AcceptProbe: whether record id is stored,
// pending, unanswered and this handle's.
func (d *Delivery) Stored(ctx context.Context, id string) (bool, error) {
	var mine bool
	err := d.db.read.QueryRowContext(ctx, `SELECT owner = ? AND done_at IS NULL AND reply IS NULL
		FROM journal WHERE id = ?`, d.owner, id).Scan(&mine)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("sqlitestore: delivery stored %q: %w", id, storageErr(err))
	}
	return mine, nil
}

// validIDs drops the ids no record can have (marks of them do nothing).
func validIDs(ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		if sessions.CheckID("record", id) == nil {
			out = append(out, id)
		}
	}
	return out
}

// mark runs set (a constant of this file) on the pending records ids.
func (d *Delivery) mark(op, set string, ids []string) error {
	if ids = validIDs(ids); len(ids) == 0 {
		return nil
	}
	err := d.writeMark(op, func(tx *wtx) error {
		for _, id := range ids {
			if _, err := tx.Exec(`UPDATE journal SET `+set+` WHERE id = ? AND done_at IS NULL`, id); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: delivery %s: %w", op, err)
	}
	return nil
}

// Start records that a turn began for ids.
func (d *Delivery) Start(ids ...string) error { return d.mark("start", `starts = starts + 1`, ids) }

// Fail records that a turn for ids ended in a failure that leaves them
// pending.
func (d *Delivery) Fail(ids ...string) error { return d.mark("fail", `failures = failures + 1`, ids) }

// Abort records that a turn for ids stopped for a shutdown: not a death
// (Starts-1, never below 0).
func (d *Delivery) Abort(ids ...string) error {
	return d.mark("abort", `starts = max(starts - 1, 0)`, ids)
}

// Done gives ids their outcome: they are kept only for duplicate
// detection.
func (d *Delivery) Done(ids ...string) error {
	if err := d.markDone("done", ids); err != nil {
		return err
	}
	return nil
}

func (d *Delivery) markDone(op string, ids []string) error {
	if ids = validIDs(ids); len(ids) == 0 {
		return nil
	}
	now := toNanos(d.db.clock())
	err := d.writeMark(op, func(tx *wtx) error { return doneIn(tx, ids, now) },
		func() { d.completed(len(ids)) })
	if err != nil {
		return fmt.Errorf("sqlitestore: delivery %s: %w", op, err)
	}
	return nil
}

// doneIn marks ids done at now in tx. A done record is kept only as its
// id (a redelivery of it is dropped for sessions.DoneRetention): its
// payload, which nothing reads again, goes now, not at the pruning a day
// later (a day of updates kept whole, as pgstore's doneSet clears it).
func doneIn(tx *wtx, ids []string, now int64) error {
	for _, id := range ids {
		if _, err := tx.Exec(`UPDATE journal SET done_at = ?, reply = NULL, payload = '' WHERE id = ? AND done_at IS NULL`, now, id); err != nil {
			return err
		}
	}
	return nil
}

// completed counts n completions and prunes the done ids every
// pruneEvery of them.
func (d *Delivery) completed(n int) {
	if d.done.Add(int64(n)) < pruneEvery {
		return
	}
	d.done.Store(0)
	if err := d.prune(); err != nil {
		d.log.Warn("journal pruning failed", zap.Error(err))
	}
}

// pruneBatch bounds the rows one pruning job deletes: a journal that
// went long unpruned is cut in several jobs, so that accepts queued
// meanwhile wait for one of them only.
const pruneBatch = 5000

// prune forgets the done ids older than sessions.DoneRetention that are
// not among the last sessions.DoneKeep completions.
func (d *Delivery) prune() error {
	cut := toNanos(d.db.clock().Add(-sessions.DoneRetention))
	for {
		var n int64
		ctx, cancel := opCtx()
		err := d.db.w.do(ctx, func(tx *wtx) error {
			r, err := tx.Exec(`DELETE FROM journal WHERE seq IN (SELECT seq FROM journal
				WHERE done_at IS NOT NULL AND done_at < ? AND seq NOT IN
					(SELECT seq FROM journal WHERE done_at IS NOT NULL ORDER BY done_at DESC, seq DESC LIMIT ?)
				LIMIT ?)`, cut, sessions.DoneKeep, pruneBatch)
			if err != nil {
				return err
			}
			n, err = r.RowsAffected()
			return err
		})
		cancel()
		if err != nil || n < pruneBatch {
			return err
		}
	}
}

// Ready stores r durably before its first chunk is sent; a reply stored
// again replaces itself (and moves to the end). A reply without chunks is
// complete at once. The draft it takes over (r.Draft) is retired, and its
// records are answered by it (no longer Pending) until it is delivered.
func (d *Delivery) Ready(r sessions.Reply) error {
	if err := sessions.CheckID("reply", r.ID); err != nil {
		return fmt.Errorf("sqlitestore: ready: %w", err)
	}
	for _, id := range r.Records {
		if err := sessions.CheckID("record", id); err != nil {
			return fmt.Errorf("sqlitestore: ready %q: %w", r.ID, err)
		}
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = d.db.clock()
	}
	r.CreatedAt = r.CreatedAt.UTC()
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sqlitestore: ready %q: %w", r.ID, err)
	}
	now := toNanos(d.db.clock())
	complete := r.Sent >= len(r.Chunks)
	err = d.writeMark("ready", func(tx *wtx) error {
		if _, err := tx.Exec(`DELETE FROM outbox WHERE id = ?`, r.ID); err != nil {
			return err
		}
		if r.Draft != "" {
			if _, err := tx.Exec(`DELETE FROM drafts WHERE id = ?`, r.Draft); err != nil {
				return err
			}
		}
		if complete {
			return doneIn(tx, r.Records, now)
		}
		if _, err := tx.Exec(`INSERT INTO outbox (id, body, chunks, sent) VALUES (?, ?, ?, ?)`,
			r.ID, string(body), len(r.Chunks), r.Sent); err != nil {
			return err
		}
		for _, id := range r.Records {
			if _, err := tx.Exec(`UPDATE journal SET reply = ? WHERE id = ? AND done_at IS NULL`, r.ID, id); err != nil {
				return err
			}
		}
		return nil
	}, func() {
		if complete {
			d.completed(len(r.Records))
		}
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: ready %q: %w", r.ID, err)
	}
	return nil
}

// Sent records that the first n chunks of reply id were delivered (a
// lower n than stored changes nothing). Once every chunk is, the reply is
// removed and its records are done, in one transaction.
func (d *Delivery) Sent(id string, n int) error {
	if sessions.CheckID("reply", id) != nil {
		return nil
	}
	now := toNanos(d.db.clock())
	var records int
	err := d.writeMark("sent", func(tx *wtx) error {
		records = 0
		var (
			body   string
			chunks int
		)
		err := tx.QueryRow(`SELECT body, chunks FROM outbox WHERE id = ?`, id).Scan(&body, &chunks)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if n < chunks {
			_, err := tx.Exec(`UPDATE outbox SET sent = max(sent, ?) WHERE id = ?`, n, id)
			return err
		}
		var r sessions.Reply
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return fmt.Errorf("reply %q: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM outbox WHERE id = ?`, id); err != nil {
			return err
		}
		records = len(r.Records)
		return doneIn(tx, r.Records, now)
	}, func() { d.completed(records) })
	if err != nil {
		return fmt.Errorf("sqlitestore: sent %q: %w", id, err)
	}
	return nil
}

// Pending returns the records without an outcome (accepted, not done,
// not answered by a reply being delivered) of earlier handles, oldest
// first: what a start resumes. This handle's are in its caller's hands.
func (d *Delivery) Pending() ([]sessions.Record, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var out []sessions.Record
	err := d.db.query(ctx, func(rows *sql.Rows) error {
		var (
			r       sessions.Record
			payload string
			at      int64
		)
		if err := rows.Scan(&r.ID, &r.AgentID, &r.SessionKey, &payload, &r.Starts, &r.Failures, &r.Attempts,
			&r.Consumed, &at); err != nil {
			return err
		}
		r.Payload, r.AcceptedAt = json.RawMessage(payload), fromNanos(at)
		out = append(out, r)
		return nil
	}, `SELECT id, agent_id, session_key, payload, starts, failures, attempts, consumed, accepted_at FROM journal
		WHERE done_at IS NULL AND reply IS NULL AND owner <> ? ORDER BY seq`, d.owner)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: delivery pending: %w", err)
	}
	return out, nil
}

// Replies returns the replies not completely delivered, oldest first.
func (d *Delivery) Replies() ([]sessions.Reply, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var out []sessions.Reply
	err := d.db.query(ctx, func(rows *sql.Rows) error {
		var (
			body string
			sent int
			r    sessions.Reply
		)
		if err := rows.Scan(&body, &sent); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
		r.Sent = sent
		out = append(out, r)
		return nil
	}, `SELECT body, sent FROM outbox ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: delivery replies: %w", err)
	}
	return out, nil
}

// Draft records a draft message when it is posted.
func (d *Delivery) Draft(dr sessions.Draft) error {
	if err := sessions.CheckID("draft", dr.ID); err != nil {
		return fmt.Errorf("sqlitestore: draft: %w", err)
	}
	if dr.CreatedAt.IsZero() {
		dr.CreatedAt = d.db.clock()
	}
	dr.CreatedAt = dr.CreatedAt.UTC()
	body, err := json.Marshal(dr)
	if err != nil {
		return fmt.Errorf("sqlitestore: draft %q: %w", dr.ID, err)
	}
	err = d.writeMark("draft", func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO drafts (id, owner, body) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, body = excluded.body`, dr.ID, d.owner, string(body))
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: draft %q: %w", dr.ID, err)
	}
	return nil
}

// DraftDone retires draft id once it was deleted.
func (d *Delivery) DraftDone(id string) error {
	if sessions.CheckID("draft", id) != nil {
		return nil
	}
	err := d.writeMark("draft done", func(tx *wtx) error {
		_, err := tx.Exec(`DELETE FROM drafts WHERE id = ?`, id)
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: draft done %q: %w", id, err)
	}
	return nil
}

// Drafts returns the drafts earlier handles left, oldest first.
func (d *Delivery) Drafts() ([]sessions.Draft, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var out []sessions.Draft
	err := d.db.query(ctx, func(rows *sql.Rows) error {
		var (
			body string
			dr   sessions.Draft
		)
		if err := rows.Scan(&body); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(body), &dr); err != nil {
			return fmt.Errorf("draft: %w", err)
		}
		out = append(out, dr)
		return nil
	}, `SELECT body FROM drafts WHERE owner <> ? ORDER BY seq`, d.owner)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: drafts: %w", err)
	}
	return out, nil
}

// DraftLive reports whether draft id is stored and not retired.
func (d *Delivery) DraftLive(id string) bool {
	if sessions.CheckID("draft", id) != nil {
		return false
	}
	ctx, cancel := opCtx()
	defer cancel()
	var n int
	if err := d.db.read.QueryRowContext(ctx, `SELECT count(*) FROM drafts WHERE id = ?`, id).Scan(&n); err != nil {
		d.log.Warn("draft lookup failed", zap.Error(err))
		return false
	}
	return n > 0
}

// Health is nil while records can be written: the held marks' fault
// (backlog), else the last commit's error. Unhealthy, it starts the
// recovery loop, which settles it once the database takes writes again.
func (d *Delivery) Health() error {
	if err := d.heldErr(); err != nil {
		d.recovering()
		return err
	}
	if err := d.db.w.health(); err != nil {
		d.recovering()
		return err
	}
	return nil
}

// Stats counts this handle's writes (Lines), the database's commits
// (Fsyncs: one fsync of the WAL each, shared by every write of the group)
// and the stored pending records and replies.
func (d *Delivery) Stats() sessions.JournalStats {
	st := sessions.JournalStats{Lines: d.writes.Load(), Fsyncs: d.db.w.fsyncs.Load(), WriteFailures: d.failures.Load()}
	ctx, cancel := opCtx()
	defer cancel()
	err := d.db.read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM journal WHERE done_at IS NULL),
		(SELECT count(*) FROM outbox)`).Scan(&st.Pending, &st.Replies)
	if err != nil {
		d.log.Warn("delivery stats unavailable", zap.Error(err))
	}
	return st
}
