package pgstore

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

var _ sessions.DeliveryRecorder = (*Store)(nil)

// recordDeliverySQL sets where a session's latest reply went, as a Patch
// of DeliveryContext does (updatedAt moves), in one statement.
const recordDeliverySQL = `UPDATE entries SET delivery_channel = $3, delivery_to = $4, delivery_account_id = $5,
	delivery_thread_id = $6, updated_at = GREATEST(updated_at, $7::timestamptz)
	WHERE agent_id = $1 AND session_key = $2`

// RecordDelivery is sessions.DeliveryRecorder: one UPDATE that rides with
// the group commit's next write (a rider, writegroup.go), where Patch took
// a transaction of its own (BEGIN, the row read FOR UPDATE, the UPDATE,
// COMMIT: four round trips and a commit, at the first reply of every
// session). Flush waits for it.
func (s *Store) RecordDelivery(key routing.Key, dc sessions.DeliveryContext, done func(error)) {
	finish := func(err error) {
		if done != nil {
			done(err)
		}
	}
	k, err := s.x.keyString(key)
	if err != nil {
		finish(fmt.Errorf("pgstore: record delivery: %w", err))
		return
	}
	dc = dc.Clean()
	args := []any{s.x.agentID, k, dc.Channel, dc.To, dc.AccountID, dc.ThreadID, s.x.db.clock()}
	s.x.db.writes.ride(&write{op: OpIndex, key: rowKey("e", s.x.agentID, k), fill: func(b *pgx.Batch) {
		b.Queue(recordDeliverySQL, args...)
	}, done: func(err error) {
		if err != nil {
			err = s.x.db.storageErr(fmt.Errorf("pgstore: record delivery: %w", err))
			s.log.Warn("delivery context not recorded", zap.String("session_key", k), zap.Error(err))
		}
		finish(err)
	}})
}
