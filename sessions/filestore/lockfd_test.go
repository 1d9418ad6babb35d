package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

// openLockFiles counts ls's locks whose lock file is open.
func openLockFiles(ls *lockSet) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for _, l := range ls.locks {
		if l.fh != nil {
			n++
		}
	}
	return n
}

func holdOnce(t *testing.T, l *fileLock) {
	t.Helper()
	_, unlock, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// TestLockFilesCachedAndBounded: released locks keep their file open, at
// most maxOpen of them, least recently used closed first; Close closes all.
func TestLockFilesCachedAndBounded(t *testing.T) {
	dir := t.TempDir()
	ls := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	ls.maxOpen = 3
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%d.lock", i)) }
	holdOnce(t, ls.get(path(0)))
	if n := openLockFiles(ls); n != 1 {
		t.Fatalf("%d lock files open after one hold, want 1 (kept)", n)
	}
	for i := 1; i < 10; i++ {
		holdOnce(t, ls.get(path(i)))
		holdOnce(t, ls.get(path(1))) // recently used: stays
		if n := openLockFiles(ls); n > 3 {
			t.Fatalf("%d lock files open, want at most 3", n)
		}
	}
	if ls.get(path(1)).fh == nil || ls.get(path(9)).fh == nil || ls.get(path(2)).fh != nil {
		t.Fatal("the cache did not keep the most recently used lock files")
	}
	ls.close()
	if n := openLockFiles(ls); n != 0 {
		t.Fatalf("%d lock files open after close", n)
	}
	holdOnce(t, ls.get(path(1))) // still works, uncached
	if n := openLockFiles(ls); n != 0 {
		t.Fatalf("%d lock files open after a hold past close", n)
	}
}

// TestLockHeldNotEvicted: a held lock keeps its file (and its flock) while
// other locks push it out of the cache; it is closed on release.
func TestLockHeldNotEvicted(t *testing.T) {
	dir := t.TempDir()
	ls := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	ls.maxOpen = 1
	held := ls.get(filepath.Join(dir, "held.lock"))
	_, unlock, err := held.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		holdOnce(t, ls.get(filepath.Join(dir, fmt.Sprintf("%d.lock", i))))
	}
	other := newLockSet(20*time.Millisecond, time.Hour, zap.NewNop(), nil)
	if _, _, err := other.get(held.path).Acquire(context.Background()); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("another open file took a held lock: %v", err)
	}
	unlock()
	holdOnce(t, other.get(held.path))
	if n := openLockFiles(ls); n > 1 {
		t.Fatalf("%d lock files open, want at most 1", n)
	}
}

// TestLockFileRemovedWhileCached: a lock file removed (under its lock, as
// removeLockFile does) and created again by a newcomer must not let a
// process whose descriptor still names the old inode take "the same" lock.
func TestLockFileRemovedWhileCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl.lock")
	a := newLockSet(50*time.Millisecond, time.Hour, zap.NewNop(), nil)
	holdOnce(t, a.get(path)) // a keeps the file open
	b := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	removeLockFile(context.Background(), b, path)
	if fileExists(path) {
		t.Fatal("removeLockFile left the file")
	}
	c := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	_, unlock, err := c.get(path).Acquire(context.Background()) // creates a new file
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.get(path).Acquire(context.Background()); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a lock on the removed file was taken while the path's file is held: %v", err)
	}
	unlock()
	holdOnce(t, a.get(path))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.get(path).fh == nil {
		t.Fatal("a did not keep the new lock file")
	}
	if cached, err := a.get(path).fh.Stat(); err != nil || !os.SameFile(fi, cached) {
		t.Fatalf("a cached a file other than the path's (%v)", err)
	}
}

// TestLockForgetClosesOnRelease: a forgotten lock's file is not kept.
func TestLockForgetClosesOnRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	ls := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	l := ls.get(path)
	_, unlock, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ls.forget(path)
	if l.fh == nil {
		t.Fatal("forget closed the file under its holder")
	}
	unlock()
	if l.fh != nil {
		t.Fatal("a forgotten lock kept its file open after release")
	}
	holdOnce(t, ls.get(path)) // unforgotten: cached again
	if ls.get(path) == l || ls.get(path).fh == nil {
		t.Fatal("get after forget did not give a new, cached lock")
	}
	// Forgetting an unheld cached lock closes its file at once.
	ls.forget(path)
	if n := openLockFiles(ls); n != 0 {
		t.Fatalf("%d lock files open", n)
	}
}

// TestLockSetTrimmedWithItsCache: locks whose file the cache closed leave
// the set (it does not grow with every path ever locked), and a goroutine
// still holding such a lock from before is excluded from the path's new
// lock by flock, as another process would be.
func TestLockSetTrimmedWithItsCache(t *testing.T) {
	dir := t.TempDir()
	ls := newLockSet(30*time.Millisecond, time.Hour, zap.NewNop(), nil)
	ls.maxOpen = 3
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%d.lock", i)) }
	old := ls.get(path(0))
	holdOnce(t, old)
	for i := 1; i < 50; i++ {
		holdOnce(t, ls.get(path(i)))
	}
	ls.mu.Lock()
	n := len(ls.locks)
	ls.mu.Unlock()
	if n > 3 {
		t.Fatalf("the set keeps %d locks after 50 paths with a cache of 3", n)
	}
	_, unlock, err := old.Acquire(context.Background()) // a straggler's pointer
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ls.get(path(0)).Acquire(context.Background()); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("the path's new lock was taken while a trimmed one held it: %v", err)
	}
	unlock()
	holdOnce(t, ls.get(path(0)))
	if old.fh != nil {
		t.Fatal("a trimmed lock kept its file open after release")
	}
}
