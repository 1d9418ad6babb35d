package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ingress: what a channel adapter's messages need before the turn runs.
// The journal and outbox tables are the schema of SPEC §3.7 on PostgreSQL;
// this file holds the part the storage seam builds on: accepting a record
// (duplicates dropped) and claiming work with FOR UPDATE SKIP LOCKED, so
// several workers or replicas share the queue without taking a row twice.
// Consuming, replies and recovery come with the seam. Channel cursors (the
// Telegram offset, which advances only after the journal write) live here
// too.

// Record is one accepted inbound message in the journal.
type Record struct {
	ID         int64
	AgentID    string
	SessionKey string
	Channel    string
	AccountID  string
	MessageID  string // the channel's message id: duplicates are dropped
	Body       json.RawMessage
	Attempts   int
}

// Accept journals r before the channel is acknowledged. A record with the
// same (channel, account, message id) as an earlier one is a duplicate
// delivery: it is not stored again and Accept reports false.
func (db *DB) Accept(ctx context.Context, r Record) (int64, bool, error) {
	var id int64
	err := db.pool.QueryRow(ctx, `INSERT INTO journal (agent_id, session_key, channel, account_id, message_id, body)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (channel, account_id, message_id) DO NOTHING RETURNING id`,
		r.AgentID, r.SessionKey, r.Channel, r.AccountID, r.MessageID, string(r.Body)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("pgstore: accept: %w", err)
	}
	return id, true, nil
}

// claimSQL takes up to $2 records that are pending, or claimed by a worker
// whose lease ran out, oldest first. SKIP LOCKED lets concurrent claimers
// pass over each other's rows instead of waiting for them.
const claimSQL = `UPDATE journal j SET status = 'claimed', claimed_by = $1, claimed_until = $3,
	attempts = j.attempts + 1, updated_at = $4
FROM (SELECT id FROM journal
	WHERE status = 'pending' OR (status = 'claimed' AND claimed_until < $4)
	ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) c
WHERE j.id = c.id
RETURNING j.id, j.agent_id, j.session_key, j.channel, j.account_id, j.message_id, j.body::text, j.attempts`

// Claim leases up to n journal records to owner for lease. A record is
// given to one claimer at a time; when a lease runs out (its worker died)
// the record is claimable again, with Attempts counting the claims.
func (db *DB) Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]Record, error) {
	now := db.clock()
	rows, err := db.pool.Query(ctx, claimSQL, owner, n, now.Add(lease), now)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Record, error) {
		var (
			rec  Record
			body string
		)
		err := r.Scan(&rec.ID, &rec.AgentID, &rec.SessionKey, &rec.Channel, &rec.AccountID, &rec.MessageID, &body, &rec.Attempts)
		rec.Body = json.RawMessage(body)
		return rec, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim: %w", err)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
