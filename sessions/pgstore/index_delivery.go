package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

var _ sessions.DeliveryRecorder = (*Store)(nil)

// recordDeliverySQL sets where a session's latest reply went, as a Patch
// of DeliveryContext does (updatedAt moves), in one statement.
const recordDeliverySQL = `UPDATE entries SET delivery_channel = $3, delivery_to = $4, delivery_account_id = $5,
	delivery_thread_id = $6, updated_at = GREATEST(updated_at, $7::timestamptz)
	WHERE agent_id = $1 AND session_key = $2`

// RecordDelivery is sessions.DeliveryRecorder: one UPDATE committed lazily
// with the group commit's other writes (lazy.go), where Patch took a
// transaction of its own (BEGIN, the row read FOR UPDATE, the UPDATE,
// COMMIT: four round trips and a commit, at the first reply of every
// session). It is not a rider (writegroup.go): a rider holds back the
// outcome of every write handed over after it, so one waiting for a row
// another transaction locked (an operator's Patch, a doctor run) would
// stall every session's writes; a waiting write fails alone at the
// statement timeout.
func (s *Store) RecordDelivery(ctx context.Context, key routing.Key, dc sessions.DeliveryContext) error {
	ctx = withOp(ctx, OpIndex)
	k, err := s.x.keyString(key)
	if err != nil {
		return fmt.Errorf("pgstore: record delivery: %w", err)
	}
	dc = dc.Clean()
	args := []any{s.x.agentID, k, dc.Channel, dc.To, dc.AccountID, dc.ThreadID, s.x.db.clock()}
	err = s.x.db.writes.do(ctx, &write{op: OpIndex, key: rowKey("e", s.x.agentID, k), fill: func(b *pgx.Batch) {
		b.Queue(recordDeliverySQL, args...)
	}})
	if err != nil {
		return s.x.db.storageErr(fmt.Errorf("pgstore: record delivery: %w", err))
	}
	return nil
}
