package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// withFileLock runs fn holding the cross-process lock on path+".lock"
// (path's directory is created first), waiting for it at most timeout;
// what names the file in errors ("limit counters", "dead letters").
func withFileLock(ctx context.Context, path string, timeout time.Duration, what string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sessions: %s: %w", what, err)
	}
	lk := flock.New(path + ".lock")
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ok, err := lk.TryLockContext(lctx, 5*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("sessions: %s: lock %s: %w", what, path, errors.Join(err, errors.New("timed out")))
	}
	defer func() { _ = lk.Unlock() }()
	return fn()
}
