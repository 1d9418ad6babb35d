package pgstore

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// forgetBatch bounds the ended jobs one statement deletes.
const forgetBatch = 5000

// ForgetEndedJobs deletes the jobs that ended before before (their
// retention ran out), forgetBatch at a time (found through jobs_ended),
// and returns how many; dry only counts them (maintenance in warn mode).
// Replicas may run it at once: each row is deleted once.
func (db *DB) ForgetEndedJobs(ctx context.Context, before time.Time, dry bool) (int, error) {
	ctx = withOp(ctx, OpJobs)
	if dry {
		var n int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE state <> 'active' AND ended_at < $1`, before).Scan(&n); err != nil {
			return 0, fmt.Errorf("pgstore: forget ended jobs: %w", err)
		}
		return n, nil
	}
	// A job ended by a gateway older than migration 00028 (a replica not
	// yet upgraded) has no end time: its retention starts now.
	if _, err := db.pool.Exec(ctx, `UPDATE jobs SET ended_at = $1 WHERE state <> 'active' AND ended_at IS NULL`, db.clock()); err != nil {
		return 0, fmt.Errorf("pgstore: forget ended jobs: %w", err)
	}
	total := 0
	for {
		tag, err := db.pool.Exec(ctx, `DELETE FROM jobs WHERE id IN (
			SELECT id FROM jobs WHERE state <> 'active' AND ended_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, forgetBatch)
		if err != nil {
			return total, fmt.Errorf("pgstore: forget ended jobs: %w", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < forgetBatch {
			return total, nil
		}
	}
}

// maintainJobs forgets the ended jobs past the policy's archiveRetention
// (sessions.MaintainEndedJobs), as the other backends do.
func (b *Backend) maintainJobs(ctx context.Context, cfg sessions.Maintenance) error {
	if err := sessions.MaintainEndedJobs(ctx, cfg, b.db.clock(), b.db.ForgetEndedJobs, b.log); err != nil {
		b.log.Warn("job maintenance failed", zap.Error(err))
		return err
	}
	return nil
}
