package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

const recordCols = `id, agent_id, session_key, payload::text, starts, failures, attempts, consumed, accepted_at`

func scanRecord(row pgx.CollectableRow) (sessions.Record, error) {
	var (
		r       sessions.Record
		payload string
	)
	err := row.Scan(&r.ID, &r.AgentID, &r.SessionKey, &payload, &r.Starts, &r.Failures, &r.Attempts, &r.Consumed, &r.AcceptedAt)
	r.Payload = json.RawMessage(payload)
	r.AcceptedAt = r.AcceptedAt.UTC()
	return r, err
}

// Pending returns the records without an outcome (accepted, not done, not
// answered by an outstanding reply) that another handle accepted, oldest
// first: what a start resumes. This handle's own records are in its
// caller's hands already.
func (d *Delivery) Pending() ([]sessions.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	defer cancel()
	rows, err := d.db.pool.Query(ctx, `SELECT `+recordCols+` FROM delivery_records
		WHERE state = 'pending' AND reply IS NULL AND owner <> $1 ORDER BY seq`, d.owner)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery pending: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery pending: %w", err)
	}
	return out, nil
}

// Replies returns the replies not completely delivered, oldest first.
func (d *Delivery) Replies() ([]sessions.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	defer cancel()
	rows, err := d.db.pool.Query(ctx, `SELECT `+replyCols+` FROM delivery_replies ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery replies: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReply)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery replies: %w", err)
	}
	return out, nil
}

const replyCols = `id, records, agent_id, session_key, target::text, chunks::text, sent, entry_id, draft, created_at`

func scanReply(row pgx.CollectableRow) (sessions.Reply, error) {
	var (
		r              sessions.Reply
		target, chunks string
	)
	if err := row.Scan(&r.ID, &r.Records, &r.AgentID, &r.SessionKey, &target, &chunks,
		&r.Sent, &r.EntryID, &r.Draft, &r.CreatedAt); err != nil {
		return r, err
	}
	if len(r.Records) == 0 {
		r.Records = nil
	}
	r.Target = json.RawMessage(target)
	r.CreatedAt = r.CreatedAt.UTC()
	if err := json.Unmarshal([]byte(chunks), &r.Chunks); err != nil {
		return r, fmt.Errorf("reply %q: chunks: %w", r.ID, err)
	}
	return r, nil
}

// ClaimReplies hands up to n replies not completely delivered to this
// handle for its lease, oldest first: replies of other handles whose lease
// ran out. As Claim, with FOR UPDATE SKIP LOCKED.
func (d *Delivery) ClaimReplies(ctx context.Context, n int) ([]sessions.Reply, error) {
	now := d.clock()
	rows, err := d.db.pool.Query(ctx, `WITH c AS (
			UPDATE delivery_replies r SET owner = $1, lease_until = $3
			FROM (SELECT id FROM delivery_replies
				WHERE owner <> $1 AND (lease_until IS NULL OR lease_until <= $4)
				ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
			WHERE r.id = c.id RETURNING r.*)
		SELECT `+replyCols+` FROM c ORDER BY seq`, d.owner, n, now.Add(d.lease), now)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim replies: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReply)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim replies: %w", err)
	}
	return out, nil
}

// Stats counts this handle's writes and the stored pending records
// (answered or not) and replies. Every write is one committed transaction,
// so Lines and Fsyncs both count them.
func (d *Delivery) Stats() sessions.JournalStats {
	st := sessions.JournalStats{Lines: d.writes.Load(), Fsyncs: d.writes.Load(), WriteFailures: d.failures.Load()}
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	defer cancel()
	err := d.db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM delivery_records WHERE state = 'pending'),
		(SELECT count(*) FROM delivery_replies)`).Scan(&st.Pending, &st.Replies)
	if err != nil {
		d.log.Warn("delivery stats unavailable", zap.Error(err))
	}
	return st
}

// Draft records a draft message just posted (a draft with the same id is
// replaced).
func (d *Delivery) Draft(dr sessions.Draft) error {
	if err := sessions.CheckID("draft", dr.ID); err != nil {
		return fmt.Errorf("pgstore: delivery draft: %w", err)
	}
	if err := checkText(dr.ID, "session key", dr.SessionKey, "message id", dr.MessageID); err != nil {
		return fmt.Errorf("pgstore: delivery draft: %w", err)
	}
	target, err := compactJSON("target", dr.Target)
	if err != nil {
		return fmt.Errorf("pgstore: delivery draft %q: %w", dr.ID, err)
	}
	if dr.CreatedAt.IsZero() {
		dr.CreatedAt = d.clock()
	}
	return d.apply(mark{op: "draft", queue: func(b *pgx.Batch) {
		b.Queue(`INSERT INTO delivery_drafts (id, seq, session_key, target, message_id, created_at, owner)
			VALUES ($1, nextval('delivery_seq'), $2, $3, $4, $5, $6)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, session_key = excluded.session_key,
				target = excluded.target, message_id = excluded.message_id,
				created_at = excluded.created_at, owner = excluded.owner`,
			dr.ID, dr.SessionKey, target, dr.MessageID, dr.CreatedAt.UTC(), d.owner)
	}})
}

// DraftDone retires draft id (deleted, or finished otherwise).
func (d *Delivery) DraftDone(id string) error {
	if sessions.CheckID("draft", id) != nil {
		return nil
	}
	return d.apply(mark{op: "undraft", queue: func(b *pgx.Batch) {
		b.Queue(`DELETE FROM delivery_drafts WHERE id = $1`, id)
	}})
}

// Drafts returns the drafts other handles left, oldest first (this
// handle's drafts belong to its running turns).
func (d *Delivery) Drafts() ([]sessions.Draft, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	defer cancel()
	rows, err := d.db.pool.Query(ctx, `SELECT id, session_key, target::text, message_id, created_at
		FROM delivery_drafts WHERE owner <> $1 ORDER BY seq`, d.owner)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery drafts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sessions.Draft, error) {
		var (
			dr     sessions.Draft
			target string
		)
		err := row.Scan(&dr.ID, &dr.SessionKey, &target, &dr.MessageID, &dr.CreatedAt)
		dr.Target = json.RawMessage(target)
		dr.CreatedAt = dr.CreatedAt.UTC()
		return dr, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery drafts: %w", err)
	}
	return out, nil
}

// DraftLive reports whether draft id is recorded and not yet retired. When
// the database cannot say, it reports false (the caller then leaves the
// draft alone; it stays recorded for the next start to clear).
func (d *Delivery) DraftLive(id string) bool {
	if sessions.CheckID("draft", id) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliveryOpTimeout)
	defer cancel()
	var live bool
	err := d.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_drafts WHERE id = $1)`, id).Scan(&live)
	if err != nil {
		d.log.Warn("draft lookup failed", zap.String("draft_id", id), zap.Error(err))
		return false
	}
	return live
}

// Claim hands up to n pending, unanswered records to this handle for its
// lease, oldest first: records of other handles whose lease ran out (their
// process died or closed). Concurrent claimers skip each other's rows (FOR
// UPDATE SKIP LOCKED), so no record goes to two of them. Claimed records
// count as this handle's own: Pending leaves them out.
func (d *Delivery) Claim(ctx context.Context, n int) ([]sessions.Record, error) {
	now := d.clock()
	rows, err := d.db.pool.Query(ctx, `UPDATE delivery_records r SET owner = $1, lease_until = $3
		FROM (SELECT id FROM delivery_records
			WHERE state = 'pending' AND reply IS NULL AND owner <> $1
				AND (lease_until IS NULL OR lease_until <= $4)
			ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
		WHERE r.id = c.id
		RETURNING r.seq, r.id, r.agent_id, r.session_key, r.payload::text, r.starts, r.failures, r.attempts,
			r.consumed, r.accepted_at`, d.owner, n, now.Add(d.lease), now)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim: %w", err)
	}
	type seqRec struct {
		seq int64
		rec sessions.Record
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (seqRec, error) {
		var (
			s       seqRec
			payload string
		)
		err := row.Scan(&s.seq, &s.rec.ID, &s.rec.AgentID, &s.rec.SessionKey, &payload, &s.rec.Starts,
			&s.rec.Failures, &s.rec.Attempts, &s.rec.Consumed, &s.rec.AcceptedAt)
		s.rec.Payload = json.RawMessage(payload)
		s.rec.AcceptedAt = s.rec.AcceptedAt.UTC()
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim: %w", err)
	}
	// RETURNING follows no ORDER BY: restore accept order.
	slices.SortFunc(got, func(a, b seqRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]sessions.Record, len(got))
	for i, s := range got {
		out[i] = s.rec
	}
	return out, nil
}

// Renew extends the lease of the pending records and replies this handle
// holds. The loop calls it every Lease/3.
func (d *Delivery) Renew(ctx context.Context) error {
	b := &pgx.Batch{}
	until := d.clock().Add(d.lease)
	b.Queue(`UPDATE delivery_records SET lease_until = $2 WHERE owner = $1 AND state = 'pending'`, d.owner, until)
	b.Queue(`UPDATE delivery_replies SET lease_until = $2 WHERE owner = $1`, d.owner, until)
	if err := d.db.pool.SendBatch(ctx, b).Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("pgstore: delivery renew: %w", err)
	}
	return nil
}
