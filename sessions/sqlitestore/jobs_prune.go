package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// ForgetEndedJobs deletes the jobs that ended before before (their
// retention ran out), pruneBatch at a time (each batch one writer job,
// found through jobs_ended), and returns how many; dry only counts them
// (maintenance in warn mode).
func (db *DB) ForgetEndedJobs(ctx context.Context, before time.Time, dry bool) (int, error) {
	cut := toNanos(before.UTC())
	if dry {
		var n int
		if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE state <> 'active' AND ended_at < ?`, cut).Scan(&n); err != nil {
			return 0, fmt.Errorf("sqlitestore: forget ended jobs: %w", storageErr(err))
		}
		return n, nil
	}
	// A job ended by a gateway older than migration 00002 (another
	// process on the file not yet upgraded) has no end time: its
	// retention starts now.
	err := db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`UPDATE jobs SET ended_at = ? WHERE state <> 'active' AND ended_at IS NULL`, toNanos(db.clock()))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: forget ended jobs: %w", err)
	}
	total := 0
	for {
		var n int64
		err := db.w.do(ctx, func(tx *wtx) error {
			r, err := tx.Exec(`DELETE FROM jobs WHERE id IN (
				SELECT id FROM jobs WHERE state <> 'active' AND ended_at < ? LIMIT ?)`, cut, pruneBatch)
			if err != nil {
				return err
			}
			n, err = r.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sqlitestore: forget ended jobs: %w", err)
		}
		total += int(n)
		if n < pruneBatch {
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
