package filestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

const (
	// staleTempAge is when a leftover *.tmp of a crashed writer is removed.
	staleTempAge = time.Hour
)

// Maintain runs maintenance on every agent store on disk, then on the
// ended jobs (maintainJobs).
func (m *Manager) Maintain(ctx context.Context) ([]sessions.MaintenanceReport, error) {
	agents, err := m.Agents()
	if err != nil {
		return nil, err
	}
	var (
		out  []sessions.MaintenanceReport
		errs []error
	)
	for _, a := range agents {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		s, err := m.Store(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := s.Maintain(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, r)
	}
	if ctx.Err() == nil {
		if err := m.maintainJobs(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Maintain prunes stale entries, caps the entry count (subagent sessions
// first, oldest first, never one active in the last minute), removes
// archives past their retention and lock files of sessions that are gone.
// In warn mode it only reports and logs.
func (s *Store) Maintain(ctx context.Context) (sessions.MaintenanceReport, error) {
	cfg := *s.m.maint.Load()
	rep := sessions.MaintenanceReport{AgentID: s.agentID, Enforced: cfg.Mode != sessions.MaintenanceWarn}
	lctx, unlock, err := s.Lock(ctx)
	if err != nil {
		return rep, fmt.Errorf("sessions: maintain %s: %w", s.agentID, err)
	}
	defer unlock()
	now := s.m.now()
	err = s.commit(lctx, func(tx *opTx) error {
		// Only the two times each slot holds are read, and the candidates
		// for the cap are listed only when there are too many.
		pruned := func(sl slot) (prune bool, updated time.Time, active bool) {
			updated = sl.updatedAt()
			active = recentlyActive(updated, sl.lastInteractionAt(), now)
			return now.Sub(updated) > cfg.PruneAfter && !active, updated, active
		}
		for k, sl := range s.slots {
			if p, _, _ := pruned(sl); p {
				rep.Pruned = append(rep.Pruned, k)
			}
		}
		if over := len(s.slots) - len(rep.Pruned) - cfg.MaxEntries; over > 0 {
			type cand struct {
				k       string
				updated time.Time
			}
			rest := make([]cand, 0, len(s.slots)-len(rep.Pruned))
			for k, sl := range s.slots {
				// Never one active in the last minute.
				if p, updated, active := pruned(sl); !p && !active {
					rest = append(rest, cand{k, updated})
				}
			}
			slices.SortFunc(rest, func(a, b cand) int {
				as, bs := isSubagentKey(a.k), isSubagentKey(b.k)
				if as != bs {
					if as {
						return -1
					}
					return 1
				}
				return cmp.Or(a.updated.Compare(b.updated), cmp.Compare(a.k, b.k))
			})
			for _, c := range rest[:min(over, len(rest))] {
				rep.Capped = append(rep.Capped, c.k)
			}
		}
		slices.Sort(rep.Pruned)
		slices.Sort(rep.Capped)
		if !rep.Enforced {
			return nil
		}
		for _, k := range append(append([]string(nil), rep.Pruned...), rep.Capped...) {
			e, _ := tx.get(k)
			if _, err := tx.archiveSession(k, e, "pruned", true); err != nil {
				return err
			}
			tx.del(k)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("sessions: maintain %s: %w", s.agentID, err)
	}
	if err := s.sweepFiles(lctx, cfg, now, &rep); err != nil {
		return rep, fmt.Errorf("sessions: maintain %s: %w", s.agentID, err)
	}
	if n := len(rep.Pruned) + len(rep.Capped) + len(rep.ArchivesRemoved); n > 0 {
		msg := "session maintenance archived sessions"
		if !rep.Enforced {
			msg = "session maintenance would archive sessions (mode warn)"
		}
		s.log.Info(msg, zap.Int("pruned", len(rep.Pruned)), zap.Int("capped", len(rep.Capped)),
			zap.Int("archives_expired", len(rep.ArchivesRemoved)), zap.Int("max_entries", cfg.MaxEntries),
			zap.Strings("pruned_keys", firstKeys(rep.Pruned)), zap.Strings("capped_keys", firstKeys(rep.Capped)))
	}
	return rep, nil
}

// recentlyActive says whether an entry updated and last used at these
// times was active within sessions.ActiveWindow of now.
func recentlyActive(updated, lastInteraction, now time.Time) bool {
	return now.Sub(lastInteraction) < sessions.ActiveWindow || now.Sub(updated) < sessions.ActiveWindow
}

// isSubagentKey tells subagent keys apart without parsing: the form is
// agent:<id>:subagent:<id> and ids never contain ':'.
func isSubagentKey(k string) bool {
	parts := strings.Split(k, ":")
	return len(parts) == 4 && parts[2] == "subagent"
}

// sweepFiles removes expired archives, lock files of sessions that are no
// longer current and stale temporary files. It runs under the store lock.
func (s *Store) sweepFiles(ctx context.Context, cfg sessions.Maintenance, now time.Time, rep *sessions.MaintenanceReport) error {
	// The directory holds two files per session: read it a chunk at a
	// time rather than list (and sort) it whole.
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	expired := map[string]bool{}
	for {
		des, rerr := d.ReadDir(1024)
		var locks []string // lock files of sessions not current
		s.mu.Lock()
		for _, de := range des {
			if id, ok := strings.CutSuffix(de.Name(), transcriptExt+lockExt); ok {
				if _, current := s.slotByIDLocked(id); !current {
					locks = append(locks, de.Name())
				}
			}
		}
		s.mu.Unlock()
		for _, name := range locks {
			id := strings.TrimSuffix(name, transcriptExt+lockExt)
			if sessions.CheckSessionID(id) != nil || fileExists(filepath.Join(s.dir, id+transcriptExt)) {
				continue
			}
			if rep.Enforced {
				removeLockFile(ctx, s.m.locks, filepath.Join(s.dir, name))
				if !fileExists(filepath.Join(s.dir, name)) {
					rep.LocksRemoved++
				}
			}
		}
		for _, de := range des {
			name := de.Name()
			switch {
			case strings.HasSuffix(name, ".tmp"):
				if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > staleTempAge {
					if rep.Enforced && os.Remove(filepath.Join(s.dir, name)) == nil {
						rep.TempsRemoved++
					}
				}
			case strings.HasSuffix(name, transcriptExt+lockExt):
			default:
				_, _, at, ok := parseArchiveName(name)
				if !ok || now.Sub(at) <= cfg.ArchiveRetention {
					continue
				}
				rep.ArchivesRemoved = append(rep.ArchivesRemoved, name)
				expired[name] = true
				if rep.Enforced {
					if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
						return err
					}
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	slices.Sort(rep.ArchivesRemoved)
	if !rep.Enforced {
		return nil
	}
	// Forget archive records whose transcript is gone or expired.
	return s.commit(ctx, func(tx *opTx) error {
		if err := tx.tx.loadArchive(); err != nil {
			return err
		}
		for k, l := range tx.tx.archive {
			kept := l[:0:0]
			for _, a := range l {
				if !expired[a.File] && now.Sub(a.ArchivedAt) <= cfg.ArchiveRetention {
					kept = append(kept, a)
				}
			}
			if len(kept) != len(l) {
				tx.arch[k] = kept
			}
		}
		return nil
	})
}

// firstKeys is a sample of keys for a log line (all of them up to 20).
func firstKeys(keys []string) []string {
	return keys[:min(len(keys), 20)]
}
