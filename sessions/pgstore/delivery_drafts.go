package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Drafts: progress messages a running turn shows, recorded so that a
// start after a crash can clear them (sessions.Draft).

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
	return d.apply(mark{op: "draft", key: rowKey("d", dr.ID), queue: func(b *pgx.Batch) {
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
	d.adopted.forget(adoptedDrafts, id)
	return d.apply(mark{op: "undraft", key: rowKey("d", id), queue: func(b *pgx.Batch) {
		b.Queue(`DELETE FROM delivery_drafts WHERE id = $1`, id)
	}})
}

// Drafts takes over and returns the drafts dead handles left, oldest
// first (an open handle's drafts belong to its running turns); what an
// earlier call took over is returned again until it is retired.
func (d *Delivery) Drafts() ([]sessions.Draft, error) {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpClaim), deliveryOpTimeout)
	defer cancel()
	out, err := d.claimOrphanDrafts(ctx, d.adopted.list(adoptedDrafts))
	if err != nil {
		return nil, fmt.Errorf("pgstore: delivery drafts: %w", err)
	}
	ids := make([]string, len(out))
	for i, dr := range out {
		ids[i] = dr.ID
	}
	d.adopted.reset(adoptedDrafts, ids)
	return out, nil
}

func scanDraft(row pgx.CollectableRow) (sessions.Draft, error) {
	var (
		dr     sessions.Draft
		target string
	)
	err := row.Scan(&dr.ID, &dr.SessionKey, &target, &dr.MessageID, &dr.CreatedAt)
	dr.Target = json.RawMessage(target)
	dr.CreatedAt = dr.CreatedAt.UTC()
	return dr, err
}

// DraftLive reports whether draft id is recorded and not yet retired. When
// the database cannot say, it reports false (the caller then leaves the
// draft alone; it stays recorded for the next start to clear).
func (d *Delivery) DraftLive(id string) bool {
	if sessions.CheckID("draft", id) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(withOp(context.Background(), OpDraft), deliveryOpTimeout)
	defer cancel()
	var live bool
	err := d.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_drafts WHERE id = $1)`, id).Scan(&live)
	if err != nil {
		d.log.Warn("draft lookup failed", zap.String("draft_id", id), zap.Error(err))
		return false
	}
	return live
}
