// Package atomicfile replaces files so that a crash at any instant leaves
// either the old or the new content, never a torn or empty file (SPEC
// §3.3). It is the one copy of that routine in the project: sessions,
// access, the Telegram adapter and the doctor all write through it.
//
// The sequence is: write a uniquely named temporary file beside the target
// (mode perm, O_EXCL), fsync it, rename it over the target, fsync the
// directory so the rename itself is durable. A failure removes the
// temporary file. It imports no other project package, so any package may
// use it (internal/archtest).
package atomicfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// WriteFile replaces path with data, durably (see the package doc). The
// error names the file's base name.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	tmp := path + "." + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rb[:]) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
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
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomic write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// WriteFileIfChanged is WriteFile skipped when path already holds data;
// it reports whether it wrote.
func WriteFileIfChanged(path string, data []byte, perm os.FileMode) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, WriteFile(path, data, perm)
}

// SyncDir fsyncs a directory so a rename or a create in it is durable.
func SyncDir(dir string) error {
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

// Rename renames oldPath to newPath and fsyncs newPath's directory.
func Rename(oldPath, newPath string) error {
	if err := os.Rename(oldPath, newPath); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(newPath))
}
