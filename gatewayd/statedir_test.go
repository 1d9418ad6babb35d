package gatewayd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestStateDirLockIsExclusive: while one daemon holds the state dir, a
// second lock fails naming the holder's pid; after release it succeeds.
func TestStateDirLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	release, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockStateDir(dir); err == nil || !strings.Contains(err.Error(), "another gateway (pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("second lock: %v, want an error naming pid %d", err, os.Getpid())
	}
	release()
	release2, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}

// TestWorldWritableStateDirRestricted: a state dir open to others is
// warned about and restricted to its owner at start.
func TestWorldWritableStateDirRestricted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	if err := secureStateDir(dir, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode after start %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	if logs.FilterMessageSnippet("accessible to other users").Len() != 1 {
		t.Errorf("no warning: %+v", logs.All())
	}
}
