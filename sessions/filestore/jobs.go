package filestore

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Jobs is the files backend's sessions.Jobs: two files in
// <stateDir>/jobs (0600). jobs.json holds the live (active) jobs; a job
// that ends moves to the append-only jobs.ended.jsonl beside it
// (jobs_ended.go), so that jobs.json, rewritten at every fire, costs what
// the live jobs do whatever the daemon's age (issue 21). Each change
// takes jobs.json.lock with flock(2) (the CLI adds and removes jobs while
// the daemon runs), reads the files, applies the change, appends the
// ended jobs (fsynced) and replaces jobs.json atomically, so a change is
// durable when it returns and a claim is won by one caller only. Only one
// daemon runs on a state dir (its lock), so claims matter across restarts
// here, not across replicas.
//
// The scheduler asks for due jobs every second or so: the decoded files
// are cached and re-read only when their inode, size or mtime changed,
// and a claim that finds nothing due in the cache takes no lock and
// writes nothing, so polling costs two stats.
//
// It is safe for concurrent use.
type Jobs struct {
	path        string // jobs.json
	ended       string // jobs.ended.jsonl
	lockTimeout time.Duration
	now         func() time.Time // when a job ends

	mu    sync.Mutex // serialises this process's reads and changes (flock is per open file); guards cache
	cache jobsCache
}

// NewJobs returns the jobs in dir, normally <stateDir>/jobs; the first
// change creates dir (0700). lockTimeout bounds waiting for another
// process's lock (DefaultPairingLockTimeout when 0).
func NewJobs(dir string, lockTimeout time.Duration) *Jobs {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &Jobs{path: filepath.Join(dir, "jobs.json"), ended: filepath.Join(dir, "jobs.ended.jsonl"),
		lockTimeout: lockTimeout, now: time.Now}
}

// AddJob implements sessions.Jobs. An ended job (a copy, an import) goes
// to the ended jobs' file.
func (s *Jobs) AddJob(ctx context.Context, j sessions.Job) error {
	if err := sessions.CheckJob(j); err != nil {
		return fmt.Errorf("sessions: add job: %w", err)
	}
	return s.update(ctx, func(tx *jobsTx) error {
		if _, ok := tx.ended(j.ID); ok || tx.index(j.ID) >= 0 {
			return fmt.Errorf("sessions: add job: %w: %q", sessions.ErrJobExists, j.ID)
		}
		if tx.log.endedOnce(j.ID) {
			// A forgotten job of this id: its record must not end the new one.
			tx.lines = append(tx.lines, endedLine{Removed: j.ID})
		}
		if j.State != sessions.JobActive {
			tx.lines = append(tx.lines, endedLine{EndedAt: tx.now, Job: &j})
			return nil
		}
		tx.live, tx.dirty = append(tx.live, j), true
		return nil
	})
}

// Job implements sessions.Jobs.
func (s *Jobs) Job(ctx context.Context, id string) (sessions.Job, error) {
	var (
		j     sessions.Job
		found bool
	)
	err := s.peek(ctx, func(v jobsView) { // no copy of the files: the scheduler reads each job it fires
		if i := slices.IndexFunc(v.live, func(x sessions.Job) bool { return x.ID == id }); i >= 0 {
			j, found = v.live[i], true
			return
		}
		if i := slices.IndexFunc(v.legacy, func(x sessions.Job) bool { return x.ID == id }); i >= 0 {
			j, found = v.legacy[i], true
			return
		}
		var r endedRec
		r, found = v.log.ended(id)
		j = r.job
	})
	if err != nil {
		return sessions.Job{}, err
	}
	if !found {
		return sessions.Job{}, fmt.Errorf("sessions: job: %w: %q", sessions.ErrNoJob, id)
	}
	return j, nil
}

// ListJobs implements sessions.Jobs: the ended jobs' file is read only
// for a filter that takes ended jobs.
func (s *Jobs) ListJobs(ctx context.Context, f sessions.JobFilter) ([]sessions.Job, error) {
	out := []sessions.Job{}
	err := s.peek(ctx, func(v jobsView) {
		for _, j := range v.live {
			if f.Match(j) {
				out = append(out, j)
			}
		}
		if f.Active {
			return
		}
		for _, j := range v.legacy {
			if f.Match(j) {
				out = append(out, j)
			}
		}
		for _, r := range v.log.visible() {
			if f.Match(r.job) {
				out = append(out, r.job)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	sessions.SortJobs(out)
	return out, nil
}

// RemoveJob implements sessions.Jobs: an ended job is removed by a line
// appended to the ended jobs' file.
func (s *Jobs) RemoveJob(ctx context.Context, id string) error {
	return s.update(ctx, func(tx *jobsTx) error {
		if i := tx.index(id); i >= 0 {
			tx.live, tx.dirty = slices.Delete(tx.live, i, i+1), true
			return nil
		}
		if _, ok := tx.ended(id); ok {
			tx.lines = append(tx.lines, endedLine{Removed: id})
			return nil
		}
		return fmt.Errorf("sessions: remove job: %w: %q", sessions.ErrNoJob, id)
	})
}

// ClaimDueJobs implements sessions.Jobs.
func (s *Jobs) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]sessions.Job, time.Time, error) {
	var (
		due  bool
		next time.Time
	)
	err := s.peek(ctx, func(v jobsView) {
		due = slices.ContainsFunc(v.live, func(j sessions.Job) bool { return sessions.ClaimableJob(j, now) })
		next = nextDue(v.live, now, nil)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	if !due {
		return nil, next, nil
	}
	var claimed []sessions.Job
	err = s.update(ctx, func(tx *jobsTx) error {
		js := tx.live
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
		tx.dirty = len(claimed) > 0
		return nil
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

// settleIn applies st to job id of tx under owner's claim. An ended job
// holds no claim: its settle lost it.
func settleIn(tx *jobsTx, id, owner string, st sessions.JobSettle) error {
	i := tx.index(id)
	switch {
	case i >= 0 && tx.live[i].ClaimOwner == owner:
		tx.live[i], tx.dirty = sessions.SettledJob(tx.live[i], st), true
		return nil
	case i >= 0:
		return fmt.Errorf("sessions: settle job %q: %w (held by %q)", id, sessions.ErrJobClaimLost, tx.live[i].ClaimOwner)
	}
	if j, ok := tx.ended(id); ok {
		return fmt.Errorf("sessions: settle job %q: %w (held by %q)", id, sessions.ErrJobClaimLost, j.ClaimOwner)
	}
	return fmt.Errorf("sessions: settle job: %w: %q", sessions.ErrNoJob, id)
}

// SettleJob implements sessions.Jobs.
func (s *Jobs) SettleJob(ctx context.Context, id, owner string, st sessions.JobSettle) error {
	return s.update(ctx, func(tx *jobsTx) error { return settleIn(tx, id, owner, st) })
}

// SettleJobs implements sessions.Jobs: one rewrite of jobs.json for all
// (and one append for those that ended).
func (s *Jobs) SettleJobs(ctx context.Context, owner string, ss []sessions.JobSettled) ([]error, error) {
	errs := make([]error, len(ss))
	err := s.update(ctx, func(tx *jobsTx) error {
		for k, st := range ss {
			errs[k] = settleIn(tx, st.ID, owner, st.JobSettle)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// DisableJob implements sessions.Jobs.
func (s *Jobs) DisableJob(ctx context.Context, id, note string) error {
	return s.update(ctx, func(tx *jobsTx) error {
		i := tx.index(id)
		if i < 0 {
			if _, ok := tx.ended(id); ok {
				return nil
			}
			return fmt.Errorf("sessions: disable job: %w: %q", sessions.ErrNoJob, id)
		}
		j := tx.live[i]
		tx.live[i] = sessions.SettledJob(j, sessions.JobSettle{State: sessions.JobDisabled, NextAt: j.NextAt, Note: note})
		tx.dirty = true
		return nil
	})
}

// MoveJobs implements sessions.Jobs: one rewrite of jobs.json for the
// live jobs and one append for the ended ones, none when no job moves.
func (s *Jobs) MoveJobs(ctx context.Context, fromChatKey, toChatID, fromKey, toKey string) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *jobsTx) error {
		n = 0
		for i, j := range tx.live {
			if m, ok := sessions.MovedJob(j, fromChatKey, toChatID, fromKey, toKey); ok {
				tx.live[i], tx.dirty, n = m, true, n+1
			}
		}
		for _, r := range tx.log.visible() {
			if m, ok := sessions.MovedJob(r.job, fromChatKey, toChatID, fromKey, toKey); ok {
				tx.lines, n = append(tx.lines, endedLine{EndedAt: r.at, Job: &m}), n+1
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sessions: move jobs: %w", err)
	}
	return n, nil
}

var _ sessions.Jobs = (*Jobs)(nil)
