package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// Pending takes over and returns the records without an outcome
// (accepted, not done, not answered by an outstanding reply) of handles
// that are dead (their process died or closed them: see Orphans), oldest
// first: what a start resumes. Records of handles still open, this one's
// included, are in their callers' hands and left out; what an earlier call
// took over is returned again while it is pending.
func (d *Delivery) Pending() ([]sessions.Record, error) {
	d.db.writes.barrier() // the marks handed over (Sent) are written
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpClaim), deliveryOpTimeout)
	defer cancel()
	out, err := d.claimOrphanRecords(ctx, d.adopted.list(adoptedRecords))
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery pending: %w", err)
	}
	ids := make([]string, len(out))
	for i, r := range out {
		ids[i] = r.ID
	}
	d.adopted.reset(adoptedRecords, ids)
	return out, nil
}

// Replies returns the replies not completely delivered of this handle and
// of dead handles (taken over), oldest first; those of other open handles
// are theirs to send.
func (d *Delivery) Replies() ([]sessions.Reply, error) {
	d.db.writes.barrier() // the marks handed over (Sent) are written
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpClaim), deliveryOpTimeout)
	defer cancel()
	out, err := d.claimOrphanReplies(ctx, true)
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

// journalStatsSQL counts the pending records and the stored replies.
const journalStatsSQL = `SELECT
	(SELECT count(*) FROM delivery_records WHERE state = 'pending'),
	(SELECT count(*) FROM delivery_replies)`

// Stats counts this handle's writes and the stored pending records
// (answered or not) and replies. Every write is one committed transaction,
// so Lines and Fsyncs both count them.
func (d *Delivery) Stats() sessions.JournalStats {
	d.db.writes.barrier() // the marks handed over (Sent) are written
	st := sessions.JournalStats{Lines: d.writes.Load(), Fsyncs: d.writes.Load(), WriteFailures: d.failures.Load()}
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpJournal), deliveryOpTimeout)
	defer cancel()
	err := d.db.pool.QueryRow(ctx, journalStatsSQL).Scan(&st.Pending, &st.Replies)
	if err != nil {
		d.log.Warn("delivery stats unavailable", zap.Error(err))
	}
	return st
}

var _ sessions.AcceptProbe = (*Delivery)(nil)

// Stored implements sessions.AcceptProbe: whether record id is stored,
// pending, unanswered and this handle's.
func (d *Delivery) Stored(ctx context.Context, id string) (bool, error) {
	ctx = withOp(ctx, OpAccept)
	var mine bool
	err := d.db.pool.QueryRow(ctx, `SELECT owner = $2 AND state = 'pending' AND reply IS NULL
		FROM delivery_records WHERE id = $1`, id, d.owner).Scan(&mine)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("pgstore: delivery stored %q: %w", id, d.storageErr(err))
	}
	return mine, nil
}
