package filestore_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// openBackend opens the files backend on dir (a second call on one dir is
// a second process's handle) and closes it when t ends.
func openBackend(t *testing.T, dir string) sessions.Backend {
	t.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zaptest.NewLogger(t), Passive: true})
	if err != nil {
		t.Fatalf("sessions.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m.Backend()
}

// TestPairingConformance runs the pairing suite against the files backend:
// each case on a state directory of its own, a second handle being a second
// Manager on it.
func TestPairingConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.PairingState]string{}
	)
	sessionstest.TestPairing(t, func(t *testing.T, share sessions.PairingState) sessions.PairingState {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		ps := openBackend(t, dir).Pairing()
		mu.Lock()
		dirs[ps] = dir
		mu.Unlock()
		return ps
	})
}

// TestCursorsConformance runs the cursor suite against the files backend.
func TestCursorsConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Cursors]string{}
	)
	sessionstest.TestCursors(t, func(t *testing.T, share sessions.Cursors) sessions.Cursors {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		c := openBackend(t, dir).Cursors()
		mu.Lock()
		dirs[c] = dir
		mu.Unlock()
		return c
	})
}

// TestPairingFilesLayout pins the on-disk format package access wrote
// before the seam: <stateDir>/pairing/<channel>.json, 0600, indented JSON
// with the version first, read back and written byte for byte.
func TestPairingFilesLayout(t *testing.T) {
	dir := t.TempDir()
	ps := openBackend(t, dir).Pairing()
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	err := ps.UpdatePairing(ctx, "discord", func(d *pairstate.Data) (bool, error) {
		d.Allowed = append(d.Allowed, pairstate.Approval{Channel: "discord", AccountID: "default",
			SenderID: "u1", Code: "ABCDEFGH", ApprovedAt: at})
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pairing", "discord.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "version": 1,
  "pending": null,
  "allowed": [
    {
      "channel": "discord",
      "accountId": "default",
      "senderId": "u1",
      "code": "ABCDEFGH",
      "approvedAt": "2026-03-01T12:00:00Z"
    }
  ]
}
`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s = %v, %v; want 0600", path, st.Mode().Perm(), err)
	}
	// A file written by an earlier release is read as it is.
	old := strings.Replace(want, `"u1"`, `"u2"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "pairing", "telegram.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := openBackend(t, dir).Pairing().LoadPairing(ctx, "telegram")
	if err != nil || len(d.Allowed) != 1 || d.Allowed[0].SenderID != "u2" {
		t.Fatalf("LoadPairing of an earlier file = %+v, %v", d, err)
	}
	// A newer format, or a damaged file, is an error naming the file.
	for name, body := range map[string]string{"newer": `{"version": 2}`, "damaged": `{"version": 1,`} {
		p := filepath.Join(dir, "pairing", name+".json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ps.LoadPairing(ctx, name); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadPairing(%s) = %v, want an error naming %s", name, err, p)
		}
	}
}

// TestCursorFilesLayout: each scope is one escaped file inside
// <stateDir>/cursors, whatever the scope says.
func TestCursorFilesLayout(t *testing.T) {
	dir := t.TempDir()
	c := openBackend(t, dir).Cursors()
	ctx := t.Context()
	for _, scope := range []string{"telegram:bot1", "../../escape", "..", "a/b", "Bot"} {
		if err := c.SetCursor(ctx, scope, "offset", "1"); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "cursors"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			names = append(names, e.Name())
		}
	}
	want := []string{"%2E%2E%2F%2E%2E%2Fescape.json", "%2E%2E.json", "%42ot.json", "a%2Fb.json", "telegram%3Abot1.json"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files in cursors/ (-want +got):\n%s", diff)
	}
	top, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if e.Name() == "escape" || strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("a cursor file escaped to %s", filepath.Join(dir, e.Name()))
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cursors", "telegram%3Abot1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version int               `json:"version"`
		Cursors map[string]string `json:"cursors"`
	}
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 || f.Cursors["offset"] != "1" {
		t.Errorf("telegram%%3Abot1.json = %s (%v)", b, err)
	}
}

// BenchmarkPairing: go test -run '^$' -bench Pairing ./sessions ./sessions/pgstore
func BenchmarkPairing(b *testing.B) {
	m, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), Passive: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	sessionstest.BenchPairing(b, m.Backend().Pairing())
}

// TestLimitsConformance runs the budget counter suite against the files
// backend.
func TestLimitsConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.LimitCounters]string{}
	)
	sessionstest.TestLimits(t, func(t *testing.T, share sessions.LimitCounters) sessions.LimitCounters {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		// A fresh *Limits per handle: the backend caches one per
		// Manager, and two Managers are two processes.
		l := openBackend(t, dir).Limits()
		mu.Lock()
		dirs[l] = dir
		mu.Unlock()
		return l
	})
}

// BenchmarkLimits is sessionstest.BenchLimits on the files backend.
func BenchmarkLimits(b *testing.B) {
	m, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), Passive: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	sessionstest.BenchLimits(b, m.Backend().Limits())
}

// TestDeadLettersConformance runs the dead letter suite against the files
// backend.
func TestDeadLettersConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.DeadLetters]string{}
	)
	sessionstest.TestDeadLetters(t, func(t *testing.T, share sessions.DeadLetters) sessions.DeadLetters {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		d := openBackend(t, dir).DeadLetters()
		mu.Lock()
		dirs[d] = dir
		mu.Unlock()
		return d
	})
}
