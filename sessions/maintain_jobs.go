package sessions

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// ForgetEndedFunc forgets (in warn mode: only counts) the ended jobs that
// ended before before, returning how many.
type ForgetEndedFunc func(ctx context.Context, before time.Time, warn bool) (int, error)

// MaintainEndedJobs applies the maintenance policy to ended jobs, as every
// backend does: an ended job is kept, and listed by `gateway jobs list
// --all`, for the policy's ArchiveRetention (PruneAfter unless set, 30
// days by default), as long as an archived transcript is; in warn mode
// what would go is only reported. now is the backend's clock.
func MaintainEndedJobs(ctx context.Context, cfg Maintenance, now time.Time, forget ForgetEndedFunc, log *zap.Logger) error {
	cfg = cfg.WithDefaults()
	warn := cfg.Mode == MaintenanceWarn
	n, err := forget(ctx, now.Add(-cfg.ArchiveRetention), warn)
	if err != nil {
		return err
	}
	if n > 0 {
		msg := "job maintenance forgot ended jobs"
		if warn {
			msg = "job maintenance would forget ended jobs (mode warn)"
		}
		log.Info(msg, zap.Int("ended_jobs", n), zap.Duration("retention", cfg.ArchiveRetention))
	}
	return nil
}
