package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/gateway/gateway/sessions"
)

// jobsView is the jobs as the two files hold them.
type jobsView struct {
	// live are the active jobs of jobs.json, less those the ended file
	// says ended (left over from a crash).
	live []sessions.Job
	// legacy are the ended jobs jobs.json still holds (written before the
	// ended file existed); the next change moves them there.
	legacy []sessions.Job
	// leftover: jobs.json holds jobs the ended file says ended.
	leftover bool
	log      *endedLog
}

// jobsCache is the files as last read and the stats they were read at.
type jobsCache struct {
	ok            bool
	jsonID, endID fileStamp
	raw           []sessions.Job // jobs.json as decoded
	view          jobsView
}

// jobFile is the on-disk form of jobs.json.
type jobFile struct {
	Version int            `json:"version"`
	Jobs    []sessions.Job `json:"jobs"`
}

const jobFileVersion = 1

// jobsTx is one change: the live jobs (the change's copy) and the ended
// ones. A change edits live and sets dirty, and appends lines for the
// ended jobs; a live job it leaves in a state other than active is moved
// to the ended file.
type jobsTx struct {
	live  []sessions.Job
	dirty bool
	lines []endedLine
	log   *endedLog
	now   time.Time
}

// ended returns job id if it ended and is not forgotten.
func (tx *jobsTx) ended(id string) (sessions.Job, bool) {
	r, ok := tx.log.ended(id)
	return r.job, ok
}

// index is the position of live job id, or -1.
func (tx *jobsTx) index(id string) int {
	return slices.IndexFunc(tx.live, func(x sessions.Job) bool { return x.ID == id })
}

// peek runs fn on the jobs as the files hold them now (the cache, read
// again when a file changed), holding s.mu: fn must not keep or change
// them. The scheduler's poll peeks: two stats and a scan of the live
// jobs, no copy.
func (s *Jobs) peek(ctx context.Context, fn func(v jobsView)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	jsonID, endID, err := s.stat()
	if err != nil {
		return err
	}
	if s.cache.ok && s.cache.jsonID == jsonID && s.cache.endID == endID {
		fn(s.cache.view)
		return nil
	}
	return withFileLock(ctx, s.path, s.lockTimeout, "jobs", func() error {
		v, err := s.loadLocked()
		if err == nil {
			fn(v)
		}
		return err
	})
}

// update runs change under the locks and writes what it changed: the
// ended jobs' lines first (durable), then jobs.json.
func (s *Jobs) update(ctx context.Context, change func(tx *jobsTx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return withFileLock(ctx, s.path, s.lockTimeout, "jobs", func() error {
		v, err := s.loadClean()
		if err != nil {
			return err
		}
		tx := &jobsTx{live: slices.Clone(v.live), log: v.log, now: s.now()}
		if err := change(tx); err != nil {
			return err
		}
		_, err = s.write(tx)
		return err
	})
}

// loadClean is loadLocked, after which jobs.json holds live jobs only:
// ended jobs it still holds (left over from a crash, or written before
// the ended file existed) are taken out first, before anything else is
// appended (a removal appended while a leftover copy stood in jobs.json
// would bring that copy back to life). The caller holds s.mu and the
// file lock.
func (s *Jobs) loadClean() (jobsView, error) {
	v, err := s.loadLocked()
	if err != nil || (!v.leftover && len(v.legacy) == 0) {
		return v, err
	}
	tx := &jobsTx{live: slices.Clone(v.live), dirty: true, log: v.log, now: s.now()}
	for _, j := range v.legacy {
		tx.lines = append(tx.lines, endedLine{EndedAt: legacyEnd(j, tx.now), Job: &j})
	}
	return s.write(tx)
}

// write writes tx: its ended lines and the live jobs it ended, then
// jobs.json if it changed. The caller holds s.mu and the file lock.
func (s *Jobs) write(tx *jobsTx) (jobsView, error) {
	live := tx.live[:0:0]
	for _, j := range tx.live {
		if j.State != sessions.JobActive {
			tx.lines = append(tx.lines, endedLine{EndedAt: tx.now, Job: &j})
			tx.dirty = true
			continue
		}
		live = append(live, j)
	}
	if !tx.dirty && len(tx.lines) == 0 {
		return s.cache.view, nil
	}
	s.cache.ok = false
	if len(tx.lines) > 0 {
		if err := appendEnded(s.ended, tx.log, tx.lines); err != nil {
			return jobsView{}, err
		}
	}
	raw := s.cache.raw
	if tx.dirty {
		b, err := json.Marshal(jobFile{Version: jobFileVersion, Jobs: live})
		if err != nil {
			return jobsView{}, fmt.Errorf("sessions: jobs: encode: %w", err)
		}
		if err := writeFileAtomic(s.path, append(b, '\n')); err != nil {
			return jobsView{}, fmt.Errorf("sessions: jobs: write %s: %w", s.path, err)
		}
		raw = live
	}
	v := jobsView{live: live, log: tx.log}
	if jsonID, endID, err := s.stat(); err == nil {
		s.cache = jobsCache{ok: true, jsonID: jsonID, endID: endID, raw: raw, view: v}
	}
	return v, nil
}

// loadLocked returns the jobs as the files hold them, from the cache for
// a file that did not change. The caller holds s.mu and the file lock.
func (s *Jobs) loadLocked() (jobsView, error) {
	jsonID, endID, err := s.stat()
	if err != nil {
		return jobsView{}, err
	}
	c := s.cache
	if c.ok && c.jsonID == jsonID && c.endID == endID {
		return c.view, nil
	}
	raw, log := c.raw, c.view.log
	if !c.ok || c.jsonID != jsonID {
		if raw, err = readJobFile(s.path); err != nil {
			return jobsView{}, err
		}
	}
	if !c.ok || c.endID != endID || log == nil {
		if log, err = readEndedLog(s.ended); err != nil {
			return jobsView{}, err
		}
	}
	v := jobsView{live: make([]sessions.Job, 0, len(raw)), log: log}
	for _, j := range raw {
		switch {
		case log.endedOnce(j.ID):
			v.leftover = true
		case j.State != sessions.JobActive:
			v.legacy = append(v.legacy, j)
		default:
			v.live = append(v.live, j)
		}
	}
	s.cache = jobsCache{ok: true, jsonID: jsonID, endID: endID, raw: raw, view: v}
	return v, nil
}

// legacyEnd is when a job found ended in jobs.json is taken to have
// ended: its last due occurrence, or now if that is later.
func legacyEnd(j sessions.Job, now time.Time) time.Time {
	if j.NextAt.After(now) {
		return now
	}
	return j.NextAt
}

// readJobFile reads jobs.json (no jobs when it does not exist).
func readJobFile(path string) ([]sessions.Job, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []sessions.Job{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: jobs: read %s: %w", path, err)
	}
	var f jobFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("sessions: jobs: decode %s: %w", path, err)
	}
	if f.Version > jobFileVersion {
		return nil, fmt.Errorf("sessions: jobs: %s has format version %d; this gateway reads up to %d",
			path, f.Version, jobFileVersion)
	}
	if f.Jobs == nil {
		f.Jobs = []sessions.Job{}
	}
	return f.Jobs, nil
}

// stat stamps the current versions of jobs.json and the ended file
// (statStamp: a change replaces jobs.json by rename, so its inode tells
// its versions apart; size and mtime tell an append, and an editor
// writing in place).
func (s *Jobs) stat() (jsonID, endID fileStamp, err error) {
	if jsonID, err = statStamp(s.path); err != nil {
		return jsonID, endID, fmt.Errorf("sessions: jobs: stat %s: %w", s.path, err)
	}
	if endID, err = statStamp(s.ended); err != nil {
		return jsonID, endID, fmt.Errorf("sessions: jobs: stat %s: %w", s.ended, err)
	}
	return jsonID, endID, nil
}
