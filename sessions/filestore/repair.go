package filestore

import (
	"context"
	"os"
	"time"

	"go.uber.org/zap"
)

// mtimeSlack covers the coarse granularity of file modification times.
const mtimeSlack = 2 * time.Second

// ensureRepaired runs the counter repair once, before the store's first
// public use (and from the Manager's start-up pass, whichever comes first).
func (s *Store) ensureRepaired() {
	if s.m.opts.Passive {
		return
	}
	s.repair.Do(func() {
		n, err := s.repairCounters(context.Background())
		if err != nil {
			s.log.Warn("counter repair from transcripts failed", zap.Error(err))
		} else if n > 0 {
			s.log.Info("lagging counters repaired from transcripts", zap.Int("sessions", n))
		}
	})
}

// repairCounters raises messageCount (and compactionOffset) of entries whose
// transcript holds more than the index says: counters are coalesced, so a
// crash may lose up to one flush interval of them. Only transcripts modified
// after their entry's updatedAt are read, so a clean start costs one stat
// per session (plus a read of those written within mtimeSlack of
// their entry's update).
func (s *Store) repairCounters(ctx context.Context) (int, error) {
	type cand struct {
		key, id string
		count   int
		off     int64
	}
	var cands []cand
	s.mu.Lock()
	if err := s.viewLocked(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	for k, sl := range s.slots {
		path, err := transcriptPath(s.dir, sl.e.SessionID)
		if err != nil {
			continue
		}
		// File times come from a coarse kernel clock and may trail the
		// updatedAt written just before an append: allow a margin.
		if fi, err := os.Stat(path); err == nil && fi.ModTime().After(sl.e.UpdatedAt.Add(-mtimeSlack)) {
			cands = append(cands, cand{key: k, id: sl.e.SessionID, count: sl.e.MessageCount, off: sl.e.CompactionOffset})
		}
	}
	s.mu.Unlock()
	var fixes []cand
	for _, c := range cands {
		t, err := s.Transcript(c.id)
		if err != nil {
			continue
		}
		n, off, err := t.Stats(ctx)
		if err != nil {
			s.log.Warn("transcript unreadable during counter repair", zap.String("session_id", c.id), zap.Error(err))
			continue
		}
		if n > c.count || off > c.off {
			fixes = append(fixes, cand{key: c.key, id: c.id, count: n, off: off})
		}
	}
	if len(fixes) == 0 {
		return 0, nil
	}
	fixed := 0
	err := s.commit(ctx, func(tx *opTx) error {
		for _, f := range fixes {
			e, ok := tx.get(f.key)
			if !ok || e.SessionID != f.id {
				continue
			}
			changed := false
			if f.count > e.MessageCount {
				e.MessageCount, changed = f.count, true
			}
			if f.off > e.CompactionOffset {
				e.CompactionOffset, changed = f.off, true
			}
			if changed {
				e.UpdatedAt = maxTime(e.UpdatedAt, tx.now())
				tx.put(f.key, e)
				fixed++
			}
		}
		return nil
	})
	return fixed, err
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
