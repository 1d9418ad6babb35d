//go:build unix

package filestore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// flock(2) on a lock file the lockSet keeps open (lockfd.go). The lock
// belongs to the open file description, so taking and dropping it on a kept
// descriptor is the same cross-process lock as on a freshly opened one.

// openLockFile opens (creating) the lock file at path.
func openLockFile(path string) (*os.File, int, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, -1, err
	}
	return f, int(f.Fd()), nil
}

// tryFlock takes the exclusive lock on fd without waiting; false when
// another open file description holds it.
func tryFlock(fd int) (bool, error) {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// unflock drops the lock on fd.
func unflock(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_UN)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// unlinked reports whether fd's file has no name left: a lock taken on it
// excludes nobody who opens the path now.
func unlinked(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	return st.Nlink == 0, nil
}
