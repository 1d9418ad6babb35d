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

// DeadLetters is the files backend's sessions.DeadLetters: one JSON file,
// <stateDir>/ingress/deadletters.json (0600, beside the journal), holding
// every letter. Each change takes <file>.lock with flock(2) (the CLI or
// another process may write too), reads the file, applies the change and
// replaces the file atomically (write, fsync, rename, fsync the
// directory), so a change is durable when it returns and a claim is won
// by one caller only. Letters are rare (a message given up after repeated
// failures), so rewriting the bounded file per change costs little.
//
// It is safe for concurrent use.
type DeadLetters struct {
	path        string
	lockTimeout time.Duration
	mu          sync.Mutex // serialises this process's changes (flock is per open file)
}

// deadLetterFile is the on-disk form.
type deadLetterFile struct {
	Version int                   `json:"version"`
	Letters []sessions.DeadLetter `json:"letters"`
}

const deadLetterFileVersion = 1

// NewDeadLetters returns the dead letters in dir, normally
// <stateDir>/ingress; the first Bury creates dir (0700). lockTimeout
// bounds waiting for another process's lock (DefaultPairingLockTimeout
// when 0).
func NewDeadLetters(dir string, lockTimeout time.Duration) *DeadLetters {
	if lockTimeout <= 0 {
		lockTimeout = DefaultPairingLockTimeout
	}
	return &DeadLetters{path: filepath.Join(dir, "deadletters.json"), lockTimeout: lockTimeout}
}

// Bury implements sessions.DeadLetters.
func (d *DeadLetters) Bury(ctx context.Context, dl sessions.DeadLetter, keep int) (int, error) {
	if err := sessions.CheckDeadLetter(dl); err != nil {
		return 0, fmt.Errorf("sessions: bury: %w", err)
	}
	if keep <= 0 {
		keep = sessions.DefaultDeadLetterKeep
	}
	dl.State = sessions.DeadFailed
	dropped := 0
	err := d.update(ctx, func(ls []sessions.DeadLetter) ([]sessions.DeadLetter, error) {
		if slices.ContainsFunc(ls, func(x sessions.DeadLetter) bool { return x.ID == dl.ID }) {
			return nil, nil
		}
		ls = append(ls, dl)
		if len(ls) > keep {
			// The oldest failed letters go; one being resubmitted stays
			// (its resubmit, or the next start, settles it).
			sortDeadLetters(ls)
			for i := len(ls) - 1; i >= 0 && len(ls) > keep; i-- {
				if ls[i].State == sessions.DeadFailed {
					ls = slices.Delete(ls, i, i+1)
					dropped++
				}
			}
		}
		return ls, nil
	})
	return dropped, err
}

// DeadLetters implements sessions.DeadLetters.
func (d *DeadLetters) DeadLetters(ctx context.Context) ([]sessions.DeadLetter, error) {
	var out []sessions.DeadLetter
	err := d.locked(ctx, func() error {
		ls, err := d.readLocked()
		out = ls
		return err
	})
	if err != nil {
		return nil, err
	}
	sortDeadLetters(out)
	return out, nil
}

// ClaimDeadLetter implements sessions.DeadLetters.
func (d *DeadLetters) ClaimDeadLetter(ctx context.Context, id string) (sessions.DeadLetter, error) {
	var got sessions.DeadLetter
	err := d.update(ctx, func(ls []sessions.DeadLetter) ([]sessions.DeadLetter, error) {
		i := slices.IndexFunc(ls, func(x sessions.DeadLetter) bool { return x.ID == id })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
		case ls[i].State != sessions.DeadFailed:
			return nil, fmt.Errorf("%w: %q", sessions.ErrDeadLetterClaimed, id)
		}
		ls[i].State = sessions.DeadResubmitting
		got = ls[i]
		return ls, nil
	})
	return got, err
}

// RemoveDeadLetter implements sessions.DeadLetters.
func (d *DeadLetters) RemoveDeadLetter(ctx context.Context, id, state string) error {
	return d.update(ctx, func(ls []sessions.DeadLetter) ([]sessions.DeadLetter, error) {
		i := slices.IndexFunc(ls, func(x sessions.DeadLetter) bool { return x.ID == id })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: %q", sessions.ErrNoDeadLetter, id)
		case ls[i].State != state:
			if ls[i].State == sessions.DeadResubmitting {
				return nil, fmt.Errorf("%w: %q", sessions.ErrDeadLetterClaimed, id)
			}
			return nil, fmt.Errorf("%w: %q in state %s", sessions.ErrNoDeadLetter, id, state)
		}
		return slices.Delete(ls, i, i+1), nil
	})
}

// update runs change on the letters under the lock and writes what it
// returns (nil: no change).
func (d *DeadLetters) update(ctx context.Context, change func([]sessions.DeadLetter) ([]sessions.DeadLetter, error)) error {
	return d.locked(ctx, func() error {
		ls, err := d.readLocked()
		if err != nil {
			return err
		}
		next, err := change(ls)
		if err != nil || next == nil {
			return err
		}
		b, err := json.Marshal(deadLetterFile{Version: deadLetterFileVersion, Letters: next})
		if err != nil {
			return fmt.Errorf("sessions: dead letters: encode: %w", err)
		}
		if err := writeFileAtomic(d.path, append(b, '\n')); err != nil {
			return fmt.Errorf("sessions: dead letters: write %s: %w", d.path, err)
		}
		return nil
	})
}

// locked runs fn holding this process's mutex and the file lock.
func (d *DeadLetters) locked(ctx context.Context, fn func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return withFileLock(ctx, d.path, d.lockTimeout, "dead letters", fn)
}

// readLocked reads the letters (none when the file does not exist).
func (d *DeadLetters) readLocked() ([]sessions.DeadLetter, error) {
	b, err := os.ReadFile(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return []sessions.DeadLetter{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: dead letters: read %s: %w", d.path, err)
	}
	var f deadLetterFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("sessions: dead letters: decode %s: %w", d.path, err)
	}
	if f.Version > deadLetterFileVersion {
		return nil, fmt.Errorf("sessions: dead letters: %s has format version %d; this gateway reads up to %d",
			d.path, f.Version, deadLetterFileVersion)
	}
	if f.Letters == nil {
		f.Letters = []sessions.DeadLetter{}
	}
	return f.Letters, nil
}

// sortDeadLetters orders letters newest first (ties by id).
func sortDeadLetters(ls []sessions.DeadLetter) {
	slices.SortFunc(ls, func(a, b sessions.DeadLetter) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.ID, b.ID))
	})
}

var _ sessions.DeadLetters = (*DeadLetters)(nil)
