package sessions

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new file: it writes <path>.<pid>.<rand>.tmp (0600), fsyncs it,
// renames it over path and fsyncs the directory.
func writeFileAtomic(path string, data []byte) error {
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	tmp := path + "." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rb[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", filepath.Base(path), err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("atomic write %s: %w", filepath.Base(path), werr)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomic write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// writeFileAtomicIfChanged skips the write when path already holds data.
func writeFileAtomicIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, writeFileAtomic(path, data)
}

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// renameDurable renames old to new and fsyncs the directory.
func renameDurable(oldPath, newPath string) error {
	if err := os.Rename(oldPath, newPath); err != nil {
		return err
	}
	return syncDir(filepath.Dir(newPath))
}

// mkdirPrivate creates dir and its parents with mode 0700.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
