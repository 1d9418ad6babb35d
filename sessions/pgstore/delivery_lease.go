package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Leases: what a handle accepts or stores is its own until its lease runs
// out (its owner row, delivery_owner_lease.go: renewed by its loop,
// released by Close); then another handle, a replica, may claim it.

// Claim hands up to n pending, unanswered records to this handle for its
// lease, oldest first: records of other handles whose lease ran out (their
// process died or closed). Concurrent claimers skip each other's rows (FOR
// UPDATE SKIP LOCKED), so no record goes to two of them. Claimed records
// count as this handle's own: Pending leaves them out.
func (d *Delivery) Claim(ctx context.Context, n int) ([]sessions.Record, error) {
	ctx = withOp(ctx, OpClaim)
	if err := d.ensureOwnerRow(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim: %w", err)
	}
	rows, err := d.db.pool.Query(ctx, claimRecordsSQL, d.owner, n, d.clock())
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim: %w", err)
	}
	out, err := collectSeqRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim: %w", err)
	}
	return out, nil
}

// claimRecordsSQL hands handle $1 up to $2 pending, unanswered records
// of others whose lease ran out at $3 (leaseRanOut; a record without a
// lease counts as run out), leased by $1's owner row from then on.
var claimRecordsSQL = `WITH ` + ownerLeasesCTE + `
	UPDATE delivery_records r SET owner = $1, lease_until = ` + rowLease + `
	FROM (SELECT id FROM delivery_records
		WHERE state = 'pending' AND reply IS NULL AND owner <> $1
			AND ` + leaseRanOut("$3", "(lease_until IS NULL OR lease_until <= $3)") + `
		ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
	WHERE r.id = c.id
	RETURNING r.seq, r.id, r.agent_id, r.session_key, r.payload::text, r.starts, r.failures, r.attempts,
		r.consumed, r.accepted_at`

// collectSeqRecords reads rows of seq followed by recordCols and returns
// the records in accept (seq) order: RETURNING follows no ORDER BY.
func collectSeqRecords(rows pgx.Rows) ([]sessions.Record, error) {
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
		return nil, err
	}
	slices.SortFunc(got, func(a, b seqRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]sessions.Record, len(got))
	for i, s := range got {
		out[i] = s.rec
	}
	return out, nil
}

// ClaimReplies hands up to n replies not completely delivered to this
// handle for its lease, oldest first: replies of other handles whose lease
// ran out. As Claim, with FOR UPDATE SKIP LOCKED.
func (d *Delivery) ClaimReplies(ctx context.Context, n int) ([]sessions.Reply, error) {
	ctx = withOp(ctx, OpClaim)
	if err := d.ensureOwnerRow(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim replies: %w", err)
	}
	rows, err := d.db.pool.Query(ctx, `WITH `+ownerLeasesCTE+`, c AS (
			UPDATE delivery_replies r SET owner = $1, lease_until = `+rowLease+`
			FROM (SELECT id FROM delivery_replies
				WHERE owner <> $1 AND `+leaseRanOut("$3", "(lease_until IS NULL OR lease_until <= $3)")+`
				ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) c
			WHERE r.id = c.id RETURNING r.*)
		SELECT `+replyCols+` FROM c ORDER BY seq`, d.owner, n, d.clock())
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim replies: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReply)
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery claim replies: %w", err)
	}
	d.noteChunks(out...)
	return out, nil
}
