package filestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Jobs is the files backend's sessions.Jobs: one JSON file,
// <stateDir>/jobs/jobs.json (0600), holding every job. Each change takes
// <file>.lock with flock(2) (the CLI adds and removes jobs while the
// daemon runs), reads the file, applies the change and replaces the file
// atomically, so a change is durable when it returns and a claim is won
// by one caller only. Only one daemon runs on a state dir (its lock), so
// claims matter across restarts here, not across replicas.
//
// The scheduler asks for due jobs every second or so: the decoded file is
// cached and re-read only when its inode, size or mtime changed, and a
// claim that finds nothing due in the cache takes no lock and writes
// nothing, so polling costs one stat.
//
// It is safe for concurrent use.
type Jobs struct {
	path        string
	lockTimeout time.Duration

	mu    sync.Mutex // serialises this process's reads and changes (flock is per open file); guards cache
	cache jobsCache
}

// jobsCache is the last decoded file and the stat it was read at.
type jobsCache struct {
	ok   bool
	id   fileID
	jobs []sessions.Job
}

// fileID tells one version of the file from another.
type fileID struct {
	ino, size int64
	mtime     time.Time
}

// jobFile is the on-disk form.
type jobFile struct {
	Version int            `json:"version"`
	Jobs    []sessions.Job `json:"jobs"`
}

const jobFileVersion = 1

// NewJobs returns the jobs in dir, normally <stateDir>/jobs; the first
// change creates dir (0700). lockTimeout bounds waiting for another
// process's lock (DefaultPairingLockTimeout when 0).
func NewJobs(dir string, lockTimeout time.Duration) *Jobs {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &Jobs{path: filepath.Join(dir, "jobs.json"), lockTimeout: lockTimeout}
}

// AddJob implements sessions.Jobs.
func (s *Jobs) AddJob(ctx context.Context, j sessions.Job) error {
	if err := sessions.CheckJob(j); err != nil {
		return fmt.Errorf("sessions: add job: %w", err)
	}
	return s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		if slices.ContainsFunc(js, func(x sessions.Job) bool { return x.ID == j.ID }) {
			return nil, fmt.Errorf("sessions: add job: %w: %q", sessions.ErrJobExists, j.ID)
		}
		return append(js, j), nil
	})
}

// Job implements sessions.Jobs.
func (s *Jobs) Job(ctx context.Context, id string) (sessions.Job, error) {
	var (
		j     sessions.Job
		found bool
	)
	err := s.peek(ctx, func(js []sessions.Job) { // no copy of the file: the scheduler reads each job it fires
		if i := slices.IndexFunc(js, func(x sessions.Job) bool { return x.ID == id }); i >= 0 {
			j, found = js[i], true
		}
	})
	if err != nil {
		return sessions.Job{}, err
	}
	if !found {
		return sessions.Job{}, fmt.Errorf("sessions: job: %w: %q", sessions.ErrNoJob, id)
	}
	return j, nil
}

// ListJobs implements sessions.Jobs.
func (s *Jobs) ListJobs(ctx context.Context, f sessions.JobFilter) ([]sessions.Job, error) {
	js, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	out := []sessions.Job{}
	for _, j := range js {
		if f.Match(j) {
			out = append(out, j)
		}
	}
	sessions.SortJobs(out)
	return out, nil
}

// RemoveJob implements sessions.Jobs.
func (s *Jobs) RemoveJob(ctx context.Context, id string) error {
	return s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		i := slices.IndexFunc(js, func(x sessions.Job) bool { return x.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("sessions: remove job: %w: %q", sessions.ErrNoJob, id)
		}
		return slices.Delete(js, i, i+1), nil
	})
}

// ClaimDueJobs implements sessions.Jobs.
func (s *Jobs) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]sessions.Job, time.Time, error) {
	var (
		due  bool
		next time.Time
	)
	err := s.peek(ctx, func(js []sessions.Job) {
		due = slices.ContainsFunc(js, func(j sessions.Job) bool { return sessions.ClaimableJob(j, now) })
		next = nextDue(js, now, nil)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	if !due {
		return nil, next, nil
	}
	var claimed []sessions.Job
	err = s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		claimed = claimed[:0]
		idx := []int{}
		for i, j := range js {
			if sessions.ClaimableJob(j, now) {
				idx = append(idx, i)
			}
		}
		slices.SortFunc(idx, func(a, b int) int {
			return cmp.Or(js[a].NextAt.Compare(js[b].NextAt), cmp.Compare(js[a].ID, js[b].ID))
		})
		if limit > 0 && len(idx) > limit {
			idx = idx[:limit]
		}
		taken := map[string]bool{}
		for _, i := range idx {
			js[i].ClaimOwner, js[i].ClaimUntil = owner, now.Add(lease)
			claimed = append(claimed, js[i])
			taken[js[i].ID] = true
		}
		next = nextDue(js, now, taken)
		if len(claimed) == 0 {
			return nil, nil
		}
		return js, nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("sessions: claim due jobs: %w", err)
	}
	return claimed, next, nil
}

// nextDue is when the next active job outside skip may be claimed: its
// due time, or the end of a claim that holds it.
func nextDue(js []sessions.Job, now time.Time, skip map[string]bool) time.Time {
	var next time.Time
	for _, j := range js {
		if j.State != sessions.JobActive || skip[j.ID] {
			continue
		}
		at := j.NextAt
		if j.ClaimOwner != "" && j.ClaimUntil.After(now) && j.ClaimUntil.After(at) {
			at = j.ClaimUntil
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// SettleJob implements sessions.Jobs.
func (s *Jobs) SettleJob(ctx context.Context, id, owner string, st sessions.JobSettle) error {
	return s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		i := slices.IndexFunc(js, func(x sessions.Job) bool { return x.ID == id })
		switch {
		case i < 0:
			return nil, fmt.Errorf("sessions: settle job: %w: %q", sessions.ErrNoJob, id)
		case js[i].ClaimOwner != owner:
			return nil, fmt.Errorf("sessions: settle job %q: %w (held by %q)", id, sessions.ErrJobClaimLost, js[i].ClaimOwner)
		}
		js[i] = sessions.SettledJob(js[i], st)
		return js, nil
	})
}

// SettleJobs implements sessions.Jobs: one rewrite of the file for all.
func (s *Jobs) SettleJobs(ctx context.Context, owner string, ss []sessions.JobSettled) ([]error, error) {
	errs := make([]error, len(ss))
	err := s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		changed := false
		for k, st := range ss {
			i := slices.IndexFunc(js, func(x sessions.Job) bool { return x.ID == st.ID })
			switch {
			case i < 0:
				errs[k] = fmt.Errorf("sessions: settle job: %w: %q", sessions.ErrNoJob, st.ID)
			case js[i].ClaimOwner != owner:
				errs[k] = fmt.Errorf("sessions: settle job %q: %w (held by %q)", st.ID, sessions.ErrJobClaimLost, js[i].ClaimOwner)
			default:
				js[i], changed = sessions.SettledJob(js[i], st.JobSettle), true
			}
		}
		if !changed {
			return nil, nil
		}
		return js, nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// DisableJob implements sessions.Jobs.
func (s *Jobs) DisableJob(ctx context.Context, id, note string) error {
	return s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		i := slices.IndexFunc(js, func(x sessions.Job) bool { return x.ID == id })
		switch {
		case i < 0:
			return nil, fmt.Errorf("sessions: disable job: %w: %q", sessions.ErrNoJob, id)
		case js[i].State != sessions.JobActive:
			return nil, nil
		}
		js[i] = sessions.SettledJob(js[i], sessions.JobSettle{State: sessions.JobDisabled, NextAt: js[i].NextAt, Note: note})
		return js, nil
	})
}

// MoveJobs implements sessions.Jobs: one rewrite of the file, none when
// no job moves.
func (s *Jobs) MoveJobs(ctx context.Context, fromChatKey, toChatID, fromKey, toKey string) (int, error) {
	n := 0
	err := s.update(ctx, func(js []sessions.Job) ([]sessions.Job, error) {
		n = 0
		for i, j := range js {
			if m, ok := sessions.MovedJob(j, fromChatKey, toChatID, fromKey, toKey); ok {
				js[i], n = m, n+1
			}
		}
		if n == 0 {
			return nil, nil
		}
		return js, nil
	})
	if err != nil {
		return 0, fmt.Errorf("sessions: move jobs: %w", err)
	}
	return n, nil
}

// read returns the jobs (from the cache when the file did not change).
// The slice is the caller's.
func (s *Jobs) read(ctx context.Context) ([]sessions.Job, error) {
	var out []sessions.Job
	err := s.peek(ctx, func(js []sessions.Job) { out = slices.Clone(js) })
	return out, err
}

// peek runs fn on the jobs as the file holds them now (the cache, read
// again when the file changed), holding s.mu: fn must not keep or change
// the slice. The scheduler's poll peeks: a stat and a scan, no copy.
func (s *Jobs) peek(ctx context.Context, fn func([]sessions.Job)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := statID(s.path)
	if err != nil {
		return err
	}
	if s.cache.ok && s.cache.id == id {
		fn(s.cache.jobs)
		return nil
	}
	return withFileLock(ctx, s.path, s.lockTimeout, "jobs", func() error {
		js, err := s.readLocked()
		if err == nil {
			fn(js)
		}
		return err
	})
}

// update runs change on the jobs under the locks and writes what it
// returns (nil: no change).
func (s *Jobs) update(ctx context.Context, change func([]sessions.Job) ([]sessions.Job, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return withFileLock(ctx, s.path, s.lockTimeout, "jobs", func() error {
		js, err := s.readLocked()
		if err != nil {
			return err
		}
		next, err := change(slices.Clone(js))
		if err != nil || next == nil {
			return err
		}
		b, err := json.Marshal(jobFile{Version: jobFileVersion, Jobs: next})
		if err != nil {
			return fmt.Errorf("sessions: jobs: encode: %w", err)
		}
		s.cache.ok = false
		if err := writeFileAtomic(s.path, append(b, '\n')); err != nil {
			return fmt.Errorf("sessions: jobs: write %s: %w", s.path, err)
		}
		if id, err := statID(s.path); err == nil {
			s.cache = jobsCache{ok: true, id: id, jobs: next}
		}
		return nil
	})
}

// readLocked reads the file (no jobs when it does not exist) and caches
// it. The caller holds s.mu and the file lock.
func (s *Jobs) readLocked() ([]sessions.Job, error) {
	id, err := statID(s.path)
	if err != nil {
		return nil, err
	}
	if s.cache.ok && s.cache.id == id {
		return s.cache.jobs, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.cache = jobsCache{ok: true, id: id, jobs: []sessions.Job{}}
		return s.cache.jobs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: jobs: read %s: %w", s.path, err)
	}
	var f jobFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("sessions: jobs: decode %s: %w", s.path, err)
	}
	if f.Version > jobFileVersion {
		return nil, fmt.Errorf("sessions: jobs: %s has format version %d; this gateway reads up to %d",
			s.path, f.Version, jobFileVersion)
	}
	if f.Jobs == nil {
		f.Jobs = []sessions.Job{}
	}
	s.cache = jobsCache{ok: true, id: id, jobs: f.Jobs}
	return f.Jobs, nil
}

// statID identifies the file's current version (the zero fileID when it
// does not exist). A change replaces the file by rename, so the inode
// alone tells versions apart; size and mtime guard against an editor
// writing in place.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileID{}, nil
	}
	if err != nil {
		return fileID{}, fmt.Errorf("sessions: jobs: stat %s: %w", path, err)
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = int64(st.Ino)
	}
	return id, nil
}

var _ sessions.Jobs = (*Jobs)(nil)
