package filestore

import (
	"context"
	"github.com/gateway/gateway/sessions"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUsageFilesLayoutAndDamage pins the files ledger: one 0600 file per
// agent and UTC month under 0700 directories; a torn last line (a crash
// mid-write) is cut before the next row, a damaged line in the middle is
// skipped, and neither hides the other rows.
func TestUsageFilesLayoutAndDamage(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	row := sessions.UsageRow{At: at, AgentID: "main", SessionKey: "agent:main:main", SessionID: "s1", EntryID: "e1", Provider: "p", Model: "m",
		Input: 10, Output: 5, Cost: 0.25}
	u := NewUsageLog(dir, nil)
	next := row
	next.At, next.EntryID = at.Add(2*time.Second), "e2" // December, UTC
	if err := u.Record(ctx, row, next); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	nov := filepath.Join(dir, "main", "2026-11.jsonl")
	for path, mode := range map[string]os.FileMode{nov: 0o600, filepath.Join(dir, "main", "2026-12.jsonl"): 0o600, filepath.Join(dir, "main"): 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v, %v; want mode %v", path, fi.Mode(), err, mode)
		}
	}
	b, err := os.ReadFile(nov)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"at":"2026-11-30T23:59:59.000Z","agent":"main",`) {
		t.Errorf("line %q: want the time first, fixed width", b)
	}
	// A damaged line, then a torn one.
	f, err := os.OpenFile(nov, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"at\":\"2026-11-30T23:59:59.500Z\",\"input\":\"not a number\"}\n{\"at\":\"2026-11-30T23:59:59.6"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	u = NewUsageLog(dir, nil)
	defer u.Close()
	third := row
	third.At, third.EntryID = at.Add(-time.Hour), "e3"
	if err := u.Record(ctx, third); err != nil {
		t.Fatal(err)
	}
	got, err := u.Query(ctx, sessions.UsageFilter{By: sessions.UsageByDay})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "2026-11-30" || got[0].Turns != 2 || got[1].Key != "2026-12-01" || got[1].Turns != 1 {
		t.Errorf("after damage: %+v, want 2 rows on 30 Nov and 1 on 1 Dec", got)
	}
	b, _ = os.ReadFile(nov)
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 3 || !strings.Contains(lines[2], `"entryId":"e3"`) {
		t.Errorf("file after the torn line was cut:\n%s", b)
	}
}
