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
	"time"

	"github.com/gateway/gateway/sessions"
)

// MaxLimitCounters bounds the files backend's counter file: past it, the
// counters whose window ends first are dropped (pruning normally keeps it
// far below: only current windows are kept).
const MaxLimitCounters = 100_000

// Limits is the files backend's LimitCounters: one JSON file,
// <dir>/counters.json (0600, dir 0700), holding every counter. AddUsage
// and PruneLimits take <file>.lock with flock(2) (the CLI or another
// process may write too), re-read the file when its size or mtime changed
// since this process last saw it, apply the change and replace the file
// atomically, so a change is durable when it returns. Callers batch their
// charges (package limits flushes once a second), so the file is rewritten
// at most that often.
//
// It is safe for concurrent use.
type Limits struct {
	path        string
	lockTimeout time.Duration

	mu    sync.Mutex // guards the fields below and serialises this process's writes
	seen  fileStamp
	cache map[sessions.LimitKey]limitRow
}

type limitRow struct {
	End   int64
	Total sessions.LimitTotal
}

// limitFile is the on-disk form.
type limitFile struct {
	Version  int            `json:"version"`
	Counters []limitFileRow `json:"counters"`
}

type limitFileRow struct {
	sessions.LimitKey
	End int64 `json:"end"`
	sessions.LimitTotal
}

const limitFileVersion = 1

// NewLimits returns the counters in dir, normally <stateDir>/limits;
// the first AddUsage creates dir (0700). lockTimeout bounds waiting for
// another process's lock (DefaultPairingLockTimeout when 0).
func NewLimits(dir string, lockTimeout time.Duration) *Limits {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &Limits{path: filepath.Join(dir, "counters.json"), lockTimeout: lockTimeout}
}

// AddUsage implements LimitCounters.
func (l *Limits) AddUsage(ctx context.Context, deltas []sessions.LimitDelta) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	merged, err := sessions.MergeLimitDeltas(deltas)
	if err != nil {
		return nil, err
	}
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(merged))
	if len(merged) == 0 {
		return out, nil
	}
	err = l.update(ctx, func(m map[sessions.LimitKey]limitRow) bool {
		for _, d := range merged {
			r, ok := m[d.Key]
			if !ok {
				r.End = d.End
			}
			r.Total.Tokens += d.Tokens
			r.Total.CostUSD += d.CostUSD
			m[d.Key] = r
			out[d.Key] = r.Total
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LimitUsage implements LimitCounters.
func (l *Limits) LimitUsage(_ context.Context, keys []sessions.LimitKey) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	for _, k := range keys {
		if err := sessions.CheckLimitKey(k); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return nil, err
	}
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(keys))
	for _, k := range keys {
		if r, ok := l.cache[k]; ok {
			out[k] = r.Total
		}
	}
	return out, nil
}

// PruneLimits implements LimitCounters.
func (l *Limits) PruneLimits(ctx context.Context, end int64) (int, error) {
	n := 0
	err := l.update(ctx, func(m map[sessions.LimitKey]limitRow) bool {
		for k, r := range m {
			if r.End <= end {
				delete(m, k)
				n++
			}
		}
		return n > 0
	})
	return n, err
}

// update runs change on the counters under the file lock and writes them
// when change reports a change.
func (l *Limits) update(ctx context.Context, change func(map[sessions.LimitKey]limitRow) bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return withFileLock(ctx, l.path, l.lockTimeout, "limit counters", func() error {
		if err := l.refreshLocked(); err != nil {
			return err
		}
		// Work on a copy: a failed write must not leave the cache ahead
		// of the file.
		m := make(map[sessions.LimitKey]limitRow, len(l.cache)+8)
		for k, r := range l.cache {
			m[k] = r
		}
		if !change(m) {
			return nil
		}
		if err := l.writeLocked(m); err != nil {
			return err
		}
		l.cache = m
		return nil
	})
}

// refreshLocked re-reads the file when it changed since last seen.
func (l *Limits) refreshLocked() error {
	fi, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		l.cache, l.seen = map[sessions.LimitKey]limitRow{}, fileStamp{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("sessions: limit counters: %w", err)
	}
	st := stampOf(fi)
	if l.cache != nil && st == l.seen {
		return nil
	}
	b, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("sessions: limit counters: read %s: %w", l.path, err)
	}
	var f limitFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("sessions: limit counters: decode %s: %w", l.path, err)
	}
	if f.Version > limitFileVersion {
		return fmt.Errorf("sessions: limit counters: %s has format version %d; this gateway reads up to %d",
			l.path, f.Version, limitFileVersion)
	}
	m := make(map[sessions.LimitKey]limitRow, len(f.Counters))
	for _, r := range f.Counters {
		m[r.LimitKey] = limitRow{End: r.End, Total: r.LimitTotal}
	}
	l.cache, l.seen = m, st
	return nil
}

// writeLocked replaces the file with m, dropping the counters that end
// first when m holds more than MaxLimitCounters.
func (l *Limits) writeLocked(m map[sessions.LimitKey]limitRow) error {
	rows := make([]limitFileRow, 0, len(m))
	for k, r := range m {
		rows = append(rows, limitFileRow{LimitKey: k, End: r.End, LimitTotal: r.Total})
	}
	if len(rows) > MaxLimitCounters {
		slices.SortFunc(rows, func(a, b limitFileRow) int {
			return cmp.Or(cmp.Compare(b.End, a.End), cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Subject, b.Subject),
				cmp.Compare(a.Period, b.Period), cmp.Compare(a.Start, b.Start))
		})
		for _, r := range rows[MaxLimitCounters:] {
			delete(m, r.LimitKey)
		}
		rows = rows[:MaxLimitCounters]
	}
	b, err := json.Marshal(limitFile{Version: limitFileVersion, Counters: rows})
	if err != nil {
		return fmt.Errorf("sessions: limit counters: encode: %w", err)
	}
	if err := writeFileAtomic(l.path, append(b, '\n')); err != nil {
		return fmt.Errorf("sessions: limit counters: write %s: %w", l.path, err)
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("sessions: limit counters: %w", err)
	}
	l.seen = stampOf(fi)
	return nil
}

var _ sessions.LimitCounters = (*Limits)(nil)

// ListLimits implements sessions.LimitLister.
func (l *Limits) ListLimits(context.Context) ([]sessions.LimitCounter, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refreshLocked(); err != nil {
		return nil, err
	}
	out := make([]sessions.LimitCounter, 0, len(l.cache))
	for k, r := range l.cache {
		out = append(out, sessions.LimitCounter{Key: k, End: r.End, Total: r.Total})
	}
	return out, nil
}

var _ sessions.LimitLister = (*Limits)(nil)
