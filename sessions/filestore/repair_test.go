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

	hold := make(chan struct{})
	started := make(chan struct{}, 1)
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
