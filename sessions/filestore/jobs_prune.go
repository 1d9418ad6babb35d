package filestore

import (
	"context"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// ForgetEnded forgets the jobs that ended before cutoff (their retention
// ran out): one line appended to the ended jobs' file, or, once at least
// half of that file's bytes are forgotten, replaced or removed jobs, a
// rewrite of it with the jobs kept. It returns how many jobs it forgot;
// dry only counts them (maintenance in warn mode).
func (s *Jobs) ForgetEnded(ctx context.Context, cutoff time.Time, dry bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	err := withFileLock(ctx, s.path, s.lockTimeout, "jobs", func() error {
		v, err := s.loadClean()
		if err != nil {
			return err
		}
		log := v.log
		var keep int64 // bytes of the jobs kept
		for _, r := range log.recs {
			switch {
			case r.removed || r.forgotten:
			case r.at.Before(cutoff):
				n++
			default:
				keep += r.n
			}
		}
		if dry || log.size == 0 {
			return nil
		}
		switch {
		case (log.size-keep)*2 >= log.size:
			if log, err = rewriteEnded(s.ended, log, cutoff); err != nil {
				return err
			}
		case n > 0:
			if err := appendEnded(s.ended, log, []endedLine{{ForgetBefore: cutoff}}); err != nil {
				return err
			}
		default:
			return nil
		}
		s.cache.ok = false
		if jsonID, endID, err := s.stat(); err == nil {
			s.cache = jobsCache{ok: true, jsonID: jsonID, endID: endID, raw: v.live, view: jobsView{live: v.live, log: log}}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sessions: forget ended jobs: %w", err)
	}
	return n, nil
}

// maintainJobs forgets the ended jobs past the maintenance policy's
// archiveRetention (sessions.MaintainEndedJobs), as the other backends do.
func (m *Manager) maintainJobs(ctx context.Context) error {
	return sessions.MaintainEndedJobs(ctx, *m.maint.Load(), m.now(), m.jobFiles().ForgetEnded, m.log)
}
