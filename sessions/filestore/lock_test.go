package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
)

// childHold takes the lock at path, says LOCKED and waits to be killed.
func childHold(path string) error {
	ls := newLockSet(time.Second, time.Hour, zap.NewNop(), nil)
	_, _, err := ls.get(path).Acquire(context.Background())
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, "LOCKED")
	time.Sleep(time.Minute)
	return nil
}

func waitLocked(t *testing.T, cmd interface{ Wait() error }, r interface {
	ReadString(byte) (string, error)
}) {
	t.Helper()
	l, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(l) != "LOCKED" {
		t.Fatalf("child did not lock: %q %v", l, err)
	}
}

// waitLockInfo reads path's metadata until it names pid (or 5 s pass).
func waitLockInfo(path string, pid int) LockInfo {
	deadline := time.Now().Add(5 * time.Second)
	for {
		li, _ := ReadLockInfo(path)
		if li.PID == pid || time.Now().After(deadline) {
			return li
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKilledHolderNeverBlocks(t *testing.T) {
	verifyNoLeaks(t)
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd, out := startChild(t, "hold", "", path)
	waitLocked(t, cmd, out)
	// Metadata is written once a hold lasts lockMetaAfter.
	if li := waitLockInfo(path, cmd.Process.Pid); li.PID != cmd.Process.Pid {
		t.Errorf("lock info pid %d, want holder %d", li.PID, cmd.Process.Pid)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	ls := newLockSet(5*time.Second, time.Hour, zap.NewNop(), nil)
	_, unlock, err := ls.get(path).Acquire(context.Background())
	if err != nil {
		t.Fatalf("acquire after holder was killed: %v", err)
	}
	if li := waitLockInfo(path, os.Getpid()); li.PID != os.Getpid() {
		t.Errorf("dead holder's metadata not overwritten: %+v", li)
	}
	unlock()
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("lock file not truncated on release: %q", b)
	}
	if !fileExists(path) {
		t.Error("lock file removed on release")
	}
}

func TestLiveHolderTimesOutWithHolderAndPath(t *testing.T) {
	verifyNoLeaks(t)
	path := filepath.Join(t.TempDir(), "sessions.json.lock")
	cmd, out := startChild(t, "hold", "", path)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitLocked(t, cmd, out)
	ls := newLockSet(200*time.Millisecond, time.Hour, zap.NewNop(), nil)
	_, _, err := ls.get(path).Acquire(context.Background())
	var lte *LockTimeoutError
	if !errors.As(err, &lte) || !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("err = %v, want *LockTimeoutError", err)
	}
	msg := err.Error()
	if lte.Holder.PID != cmd.Process.Pid || !strings.Contains(msg, "pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(msg, path) {
		t.Errorf("error %q does not name holder pid %d and path", msg, cmd.Process.Pid)
	}
}

func TestLockReentrantAndExclusive(t *testing.T) {
	verifyNoLeaks(t)
	path := filepath.Join(t.TempDir(), "a.lock")
	ls := newLockSet(5*time.Second, time.Hour, zap.NewNop(), nil)
	l := ls.get(path)
	ctx, unlock, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Same owner: no deadlock.
	ctx2, unlock2, err := l.Acquire(ctx)
	if err != nil || ctx2 != ctx {
		t.Fatalf("reentrant acquire: %v", err)
	}
	unlock2() // inner release keeps the outer hold
	if _, _, err := l.acquireWithin(context.Background(), 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("other owner got a held lock: %v", err)
	}
	// A second process-level handle (another *lockSet, i.e. another open file) is excluded too.
	other := newLockSet(20*time.Millisecond, time.Hour, zap.NewNop(), nil).get(path)
	if _, _, err := other.Acquire(context.Background()); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("second flock handle got a held lock: %v", err)
	}
	unlock()
	unlock() // idempotent

	var (
		wg      sync.WaitGroup
		inside  int
		maxSeen int
		mu      sync.Mutex
	)
	for range 16 {
		wg.Go(func() {
			for range 20 {
				_, un, err := l.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				maxSeen = max(maxSeen, inside)
				mu.Unlock()
				mu.Lock()
				inside--
				mu.Unlock()
				un()
			}
		})
	}
	wg.Wait()
	if maxSeen != 1 {
		t.Errorf("%d goroutines inside the lock at once", maxSeen)
	}
}

func TestMaxHoldWatchdogReleases(t *testing.T) {
	verifyNoLeaks(t)
	path := filepath.Join(t.TempDir(), "w.lock")
	ls := newLockSet(10*time.Second, 30*time.Millisecond, zap.NewNop(), nil)
	l := ls.get(path)
	_, forgotten, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The holder never releases; the watchdog must, so this acquire succeeds.
	_, unlock, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatalf("watchdog did not release: %v", err)
	}
	// The new hold has a 30 ms watchdog of its own, which a loaded machine
	// can outlast before the check below (CI: "late release freed the
	// current holder: <nil>", the new hold's own expiry): stop it, taking
	// the lock again if it already fired.
	for attempt := 1; !l.stopWatchdog(); attempt++ {
		if attempt == 50 {
			t.Fatal("no hold outlived its 30 ms watchdog long enough to stop it in 50 tries")
		}
		if _, unlock, err = l.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	forgotten() // a late release of the expired hold must not free the new holder
	if _, _, err := l.acquireWithin(context.Background(), 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("late release freed the current holder: %v", err)
	}
	unlock()
	if _, un, err := l.acquireWithin(context.Background(), time.Second); err != nil {
		t.Fatalf("after the holder's release: %v", err)
	} else {
		un()
	}
}

// stopWatchdog stops the current hold's max-hold watchdog; false when
// there is no hold (it expired) or the watchdog already fired.
func (l *fileLock) stopWatchdog() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && l.timer.Stop()
}

func TestLockCancelledContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.lock")
	ls := newLockSet(10*time.Second, time.Hour, zap.NewNop(), nil)
	_, unlock, _ := ls.get(path).Acquire(context.Background())
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ls.get(path).Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
