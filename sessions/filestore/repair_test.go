package filestore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestStartRepairOffFirstUse (issue 21): a start after a crash (no clean
// mark) does not check every session before its first use: the first Get
// of a session reads that session's transcript alone and has its counters
// repaired, while the background pass is held; List waits for the pass; a
// clean Close leaves a mark with which the next start reads no transcript;
// Close during the pass ends it.
func TestStartRepairOffFirstUse(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	keys := buildSessions(t, dir, n)
	sdir := filepath.Join(dir, "agents", "main", "sessions")
	if _, err := os.Stat(filepath.Join(sdir, cleanName)); err != nil {
		t.Fatalf("no clean mark after a clean Close: %v", err)
	}

	// A crash: two transcripts hold a message their counters do not count,
	// and no clean mark is left.
	m := openTestManager(t, dir, Options{})
	s := mustStore(t, m, "main")
	for _, k := range keys[:2] {
		e, ok, err := s.Get(k)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		appendText(t, s, e.SessionID, "lost count")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sdir, cleanName)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	started, hold := holdRepairPasses(t, dir)

	m = openTestManager(t, dir, Options{})
	s = mustStore(t, m, "main")
	got, _, err := s.Get(keys[0])
	if err != nil || got.MessageCount != 3 {
		t.Errorf("first Get after the crash: messageCount %d (%v), want 3 (repaired on first use)", got.MessageCount, err)
	}
	<-started
	if r := s.repair.reads.Load(); r != 1 {
		t.Errorf("the first Get read %d transcripts, want 1 (its own): the start checked sessions before the first use", r)
	}
	listed := make(chan []sessions.Entry)
	go func() {
		es, err := s.List()
		if err != nil {
			t.Error(err)
		}
		listed <- es
	}()
	select {
	case <-listed:
		t.Fatal("List answered before the repair pass ended")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	es := <-listed
	for _, e := range es {
		want := 2
		if e.SessionKey == keys[0].String() || e.SessionKey == keys[1].String() {
			want = 3
		}
		if e.MessageCount != want {
			t.Errorf("%s: messageCount %d after the pass, want %d", e.SessionKey, e.MessageCount, want)
		}
	}
	// The mark is written more than the mtime slack after the last
	// transcript write (as after any pause in traffic), so the next start
	// can tell every transcript older than it.
	time.Sleep(mtimeSlack + 100*time.Millisecond)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Clean: the next start reads no transcript at all.
	m = openTestManager(t, dir, Options{})
	s = mustStore(t, m, "main")
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	if r := s.repair.reads.Load(); r != 0 {
		t.Errorf("a start after a clean Close read %d transcripts, want 0", r)
	}
	if _, err := os.Stat(filepath.Join(sdir, cleanName)); !os.IsNotExist(err) {
		t.Errorf("the clean mark is still there while the store runs: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Close while the pass is held ends it (a SIGTERM during start-up).
	if err := os.Remove(filepath.Join(sdir, cleanName)); err != nil {
		t.Fatal(err)
	}
	hold = make(chan struct{})
	m = openTestManager(t, dir, Options{})
	mustStore(t, m, "main").ensureRepaired()
	<-started
	closed := make(chan error)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the repair pass")
	}
	if _, err := os.Stat(filepath.Join(sdir, cleanName)); !os.IsNotExist(err) {
		t.Errorf("a clean mark after a Close that cut the pass short: %v", err)
	}
}

// TestCleanMarkGoneOnOpen: a start on a clean mark checks no transcript,
// not even its time, so the mark must be gone before anything can be
// written through a store: opening it (a passive tool's as well) removes
// it. A message a passive tool appended and whose count it did not write
// (a crash) is then found by the next start.
func TestCleanMarkGoneOnOpen(t *testing.T) {
	dir := t.TempDir()
	keys := buildSessions(t, dir, 20)
	mark := filepath.Join(dir, "agents", "main", "sessions", cleanName)
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("no clean mark after a clean Close: %v", err)
	}
	m := openTestManager(t, dir, Options{Passive: true})
	s := mustStore(t, m, "main")
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("the clean mark is still there after a passive open: %v", err)
	}
	e, ok, err := s.Get(keys[3])
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	appendText(t, s, e.SessionID, "count not written")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("a passive Close left a clean mark: %v", err)
	}

	m = openTestManager(t, dir, Options{})
	s = mustStore(t, m, "main")
	es, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		want := 2
		if e.SessionKey == keys[3].String() {
			want = 3
		}
		if e.MessageCount != want {
			t.Errorf("%s: messageCount %d after the start, want %d", e.SessionKey, e.MessageCount, want)
		}
	}
}

// TestMaintenanceAfterRepair: the maintenance pass after Open waits for
// the counter repair pass to end (it would compete with it and with the
// first replies for the CPU); Close during the wait ends it.
func TestMaintenanceAfterRepair(t *testing.T) {
	dir := t.TempDir()
	buildSessions(t, dir, 20)
	sdir := filepath.Join(dir, "agents", "main", "sessions")
	started, hold := holdRepairPasses(t, dir)
	for _, closeFirst := range []bool{false, true} {
		// A crash: no clean mark, so the pass has sessions to check.
		if err := os.Remove(filepath.Join(sdir, cleanName)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		m := openTestManager(t, dir, Options{maintainAfter: -1})
		<-started
		select {
		case <-m.started:
			t.Fatal("maintenance ran while the repair pass was held")
		case <-time.After(100 * time.Millisecond):
		}
		if closeFirst {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		hold <- struct{}{}
		<-m.started
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// holdRepairPasses makes every repair pass of a store under dir signal
// started when it begins and wait until hold is closed (or its context
// ends: Close) before it checks anything.
func holdRepairPasses(t *testing.T, dir string) (started chan struct{}, hold chan struct{}) {
	t.Helper()
	hold = make(chan struct{})
	started = make(chan struct{}, 1)
	repairPassHook = func(ctx context.Context, st *Store) {
		if !strings.HasPrefix(st.dir, dir) {
			return
		}
		started <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	t.Cleanup(func() { repairPassHook = nil })
	return started, hold
}
