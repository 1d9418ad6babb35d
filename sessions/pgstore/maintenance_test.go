package pgstore

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Maintenance prunes stale sessions, caps the count (subagents first, never
// a session active in the last minute), reports without changing anything
// in warn mode, and forgets expired archives with their transcripts.
func TestMaintainPrunesCapsAndExpires(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	db.now = clk.now
	x := db.Index("main", func() sessions.ResetConfig { return sessions.ResetConfig{} })
	begin := func(k routing.Key) sessions.Entry {
		t.Helper()
		e, _, err := x.Begin(ctx, k, sessions.Origin{Channel: "telegram", At: clk.t})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	old := mustKey(t, "main", "telegram", "1")
	oldEntry := begin(old)
	if _, err := db.Append(ctx, oldEntry.SessionID, TranscriptEntry{ID: "a1", Type: "message", Body: json.RawMessage(`{"type":"message","id":"a1"}`)}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(40 * 24 * time.Hour) // old is now past pruneAfter (720h)
	sub, err := routing.SubagentKey("main", uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	begin(sub)
	clk.t = clk.t.Add(time.Hour)
	b := mustKey(t, "main", "telegram", "2")
	begin(b)
	clk.t = clk.t.Add(time.Hour)
	c := mustKey(t, "main", "telegram", "3")
	begin(c)
	clk.t = clk.t.Add(30 * time.Second)
	hot := mustKey(t, "main", "telegram", "4")
	begin(hot) // active within the last minute: never capped

	cfg := sessions.Maintenance{MaxEntries: 2}
	warn := cfg
	warn.Mode = sessions.MaintenanceWarn
	rep, err := x.Maintain(ctx, warn)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Enforced || !slices.Equal(rep.Pruned, []string{old.String()}) || !slices.Equal(rep.Capped, []string{sub.String(), b.String()}) {
		t.Fatalf("warn report: %+v", rep)
	}
	if all, _ := x.List(ctx); len(all) != 5 {
		t.Fatalf("warn mode changed the index: %d entries", len(all))
	}

	rep, err = x.Maintain(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Enforced || !slices.Equal(rep.Pruned, []string{old.String()}) || !slices.Equal(rep.Capped, []string{sub.String(), b.String()}) {
		t.Fatalf("report: %+v", rep)
	}
	var keys []string
	all, err := x.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		keys = append(keys, e.SessionKey)
	}
	if !slices.Equal(keys, []string{hot.String(), c.String()}) {
		t.Fatalf("left: %v", keys)
	}
	arch, err := x.Archived(ctx, old)
	if err != nil || len(arch) != 1 || arch[0].Reason != "pruned" || arch[0].SessionID != oldEntry.SessionID {
		t.Fatalf("archive of the pruned session: %+v, %v", arch, err)
	}

	// Past archiveRetention (= pruneAfter) the archive and its transcript go.
	clk.t = clk.t.Add(31 * 24 * time.Hour)
	rep, err = x.Maintain(ctx, sessions.Maintenance{MaxEntries: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.ArchivesRemoved) != 3 || !slices.Contains(rep.ArchivesRemoved, oldEntry.SessionID) {
		t.Fatalf("archives removed: %v", rep.ArchivesRemoved)
	}
	if arch, _ := x.Archived(ctx, old); len(arch) != 0 {
		t.Errorf("expired archive still listed: %+v", arch)
	}
	var rows int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM transcript_entries WHERE session_id = $1`, oldEntry.SessionID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("%d transcript rows of an expired archive remain", rows)
	}
}
