package pgstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/transfer"
)

func openFiles(t testing.TB, dir string) *filestore.Manager {
	t.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: dir, CacheTTL: 0, FlushInterval: time.Hour, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func noDifferences(t *testing.T, what string, c transfer.Comparison, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(c.Differences) > 0 || c.Source != c.Target {
		t.Fatalf("%s: source %+v, target %+v, differences:\n%s", what, c.Source, c.Target, strings.Join(c.Differences, "\n"))
	}
}

// TestTransferFilesPostgresRoundTrip moves a files state into PostgreSQL
// and from there into a new state dir: every key compares equal at each
// step (clocks at microseconds), the transcripts come back byte-identical,
// copying again skips everything, and a changed key is a conflict unless
// Overwrite.
func TestTransferFilesPostgresRoundTrip(t *testing.T) {
	ctx := ctxTransfer(t)
	srcDir, backDir := t.TempDir(), t.TempDir()
	src := openFiles(t, srcDir)
	built := sessionstest.BuildState(t, src.Backend().Store)
	db, _ := openTest(t)
	pg := db.Transfer()

	st, err := transfer.Copy(ctx, src.Transfer(), pg, transfer.Options{})
	if err != nil {
		t.Fatalf("files → postgres: %v", err)
	}
	if st.Sessions != len(built.Current) || st.Copied != st.Keys || st.Archived == 0 {
		t.Fatalf("files → postgres: %+v", st)
	}
	c, err := transfer.Compare(ctx, src.Transfer(), pg, 0)
	noDifferences(t, "files vs postgres", c, err)
	checkHeads(t, db)

	// The index reads back through the seam's Index as the files store has it.
	for _, k := range built.Current {
		fs, _ := src.Store(k.Agent)
		want, _, _ := fs.Get(k)
		got, ok, err := db.Store(k.Agent, nil).Get(k)
		if err != nil || !ok || got != want.AtMicros() {
			t.Fatalf("%s: postgres has %+v (%v, %v), files %+v", k, got, ok, err, want)
		}
		wa, _ := fs.Archived(k)
		ga, err := db.Store(k.Agent, nil).Archived(k)
		if err != nil || len(ga) != len(wa) {
			t.Fatalf("%s: archived %d in postgres (%v), %d in files", k, len(ga), err, len(wa))
		}
	}

	back := openFiles(t, backDir)
	if _, err := transfer.Copy(ctx, pg, back.Transfer(), transfer.Options{}); err != nil {
		t.Fatalf("postgres → files: %v", err)
	}
	c, err = transfer.Compare(ctx, pg, back.Transfer(), 0)
	noDifferences(t, "postgres vs files", c, err)
	c, err = transfer.Compare(ctx, src.Transfer(), back.Transfer(), 0)
	noDifferences(t, "original vs round trip", c, err)
	sameTranscriptFiles(t, srcDir, backDir)

	// Idempotent both ways.
	for _, tc := range []struct {
		name     string
		from, to sessions.Importer
	}{{"files → postgres", src.Transfer(), pg}, {"postgres → files", pg, back.Transfer()}} {
		again, err := transfer.Copy(ctx, tc.from, tc.to, transfer.Options{})
		if err != nil || again.Copied != 0 || again.Skipped != st.Keys {
			t.Fatalf("%s again: %+v, %v", tc.name, again, err)
		}
	}

	// A key changed in PostgreSQL is a conflict naming it.
	k := built.Current[1]
	if _, err := db.Index(k.Agent, nil).Patch(ctx, k, func(e *sessions.Entry) error { e.Title = "other"; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = transfer.Copy(ctx, src.Transfer(), pg, transfer.Options{})
	var ce *transfer.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), k.String()) {
		t.Fatalf("copy onto a changed key: %v, want a conflict naming %s", err, k)
	}
	if _, err := transfer.Copy(ctx, src.Transfer(), pg, transfer.Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	c, err = transfer.Compare(ctx, src.Transfer(), pg, 0)
	noDifferences(t, "after overwrite", c, err)
}

// sameTranscriptFiles checks every transcript (current and archived) of
// a is in b with the same bytes.
func sameTranscriptFiles(t *testing.T, a, b string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(a, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".jsonl") || strings.HasSuffix(d.Name(), ".lock") ||
			strings.HasPrefix(d.Name(), "sessions.") || strings.HasPrefix(d.Name(), "archive.") {
			return err
		}
		rel, _ := filepath.Rel(a, path)
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got, err := os.ReadFile(filepath.Join(b, rel)); err != nil || string(got) != string(want) {
			t.Errorf("%s: differs after the round trip (%v)", rel, err)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no transcripts found")
	}
}

// TestDaemonLock: while a daemon holds the database (shared), a migration
// cannot take it and the error names the holder; two daemons share it; a
// migration holding it keeps daemons waiting.
func TestDaemonLock(t *testing.T) {
	ctx := ctxT(t)
	db, url := openTest(t)
	other, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	rel1, err := db.HoldShared(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rel2, err := other.HoldShared(ctx)
	if err != nil {
		t.Fatalf("second daemon: %v", err)
	}
	_, err = other.LockExclusive(ctx)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "backend pid") {
		t.Fatalf("migration while daemons run: %v", err)
	}
	rel1()
	rel2()
	release, err := other.LockExclusive(ctx)
	if err != nil {
		t.Fatalf("migration after the daemons stopped: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := db.HoldShared(short); err == nil {
		t.Fatal("a daemon started while a migration holds the database")
	}
	release()
	rel, err := db.HoldShared(ctx)
	if err != nil {
		t.Fatalf("daemon after the migration: %v", err)
	}
	rel()
}

// checkHeads checks the columns an import derives from the lines as
// appends keep them: each head's leaf (the last entry but the header),
// message count and next seq, each compaction's first kept entry.
func checkHeads(t *testing.T, db *DB) {
	t.Helper()
	ctx := ctxT(t)
	var heads, bad int
	err := db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE
		h.leaf_id IS DISTINCT FROM (SELECT e.id FROM transcript_entries e WHERE e.session_id = h.session_id
			AND e.type <> 'session' ORDER BY e.seq DESC LIMIT 1)
		OR h.prev_leaf_id IS DISTINCT FROM ''
		OR h.messages <> (SELECT count(*) FROM transcript_entries e WHERE e.session_id = h.session_id AND e.type = 'message')
		OR h.last_seq <> (SELECT max(seq) FROM transcript_entries e WHERE e.session_id = h.session_id))
		FROM transcript_heads h`).Scan(&heads, &bad)
	if err != nil || heads == 0 || bad != 0 {
		t.Fatalf("transcript heads: %d of %d wrong (%v)", bad, heads, err)
	}
	var comps int
	err = db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE first_kept_id IS DISTINCT FROM
		substring(body::text FROM '"firstKeptEntryId":"([^"\\]*)"')) FROM transcript_entries WHERE type = 'compaction'`).Scan(&comps, &bad)
	if err != nil || comps == 0 || bad != 0 {
		t.Fatalf("compactions: %d of %d without their first kept entry (%v)", bad, comps, err)
	}
}

// TestTransferPostgresNativeRoundTrip builds the state on PostgreSQL
// itself (its own TranscriptLog writes the headers and chains), moves it
// to files and into a second database: each step compares equal, the
// context of every session is the same on all three, and the second
// database holds the first one's transcript rows byte for byte.
func TestTransferPostgresNativeRoundTrip(t *testing.T) {
	ctx := ctxTransfer(t)
	db, _ := openTest(t)
	built := sessionstest.BuildState(t, func(agent string) (sessions.AgentStore, error) { return db.Store(agent, nil), nil })
	files := openFiles(t, t.TempDir())
	st, err := transfer.Copy(ctx, db.Transfer(), files.Transfer(), transfer.Options{})
	if err != nil {
		t.Fatalf("postgres → files: %v", err)
	}
	if st.Sessions != len(built.Current) || st.Archived == 0 {
		t.Fatalf("postgres → files: %+v", st)
	}
	t.Logf("postgres → files: %+v", st)
	c, err := transfer.Compare(ctx, db.Transfer(), files.Transfer(), 0)
	noDifferences(t, "postgres vs files", c, err)
	db2, _ := openTest(t)
	if _, err := transfer.Copy(ctx, files.Transfer(), db2.Transfer(), transfer.Options{}); err != nil {
		t.Fatalf("files → postgres: %v", err)
	}
	c, err = transfer.Compare(ctx, db.Transfer(), db2.Transfer(), 0)
	noDifferences(t, "postgres vs postgres", c, err)
	checkHeads(t, db2)

	for _, k := range built.Current {
		var ctxs []sessions.Context
		for _, st := range []sessions.AgentStore{db.Store(k.Agent, nil), db2.Store(k.Agent, nil), mustStore(t, files, k.Agent)} {
			e, ok, err := st.Get(k)
			if err != nil || !ok {
				t.Fatalf("%s: %v %v", k, ok, err)
			}
			tr, err := st.Transcript(e.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			cx, err := tr.Context(ctx)
			if err != nil {
				t.Fatalf("%s: context: %v", k, err)
			}
			ctxs = append(ctxs, cx)
		}
		if len(ctxs[0].Messages) == 0 {
			t.Fatalf("%s: empty context", k)
		}
		for i := 1; i < len(ctxs); i++ {
			if diff := cmp.Diff(ctxs[0], ctxs[i]); diff != "" {
				t.Fatalf("%s: context differs on copy %d (-postgres +copy):\n%s", k, i, diff)
			}
		}
	}
	// The rows the appends wrote and the rows the import wrote agree in
	// every column but the insertion time.
	rows := func(d *DB) map[string]string {
		r, err := d.pool.Query(ctx, `SELECT session_id || '/' || seq, id || '|' || COALESCE(parent_id, '') || '|' || type || '|' ||
			COALESCE(first_kept_id, '~') || '|' || body::text FROM transcript_entries`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for r.Next() {
			var k, v string
			if err := r.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[k] = v
		}
		return out
	}
	a, b := rows(db), rows(db2)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d rows in the original, %d in the copy", len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("row %s: %q in the original, %q in the copy", k, v, b[k])
		}
	}
}

func mustStore(t *testing.T, m *filestore.Manager, agent string) sessions.AgentStore {
	t.Helper()
	st, err := m.Backend().Store(agent)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestExportKeepsTheArchivedTheSeamShows: a key reset more often than
// sessions.MaxArchivedPerKey exports the newest ones, as Archived lists
// them and as many as the files backend keeps.
func TestExportKeepsTheArchivedTheSeamShows(t *testing.T) {
	ctx := ctxTransfer(t)
	db, _ := openTest(t)
	k := mustKey(t, "main", "telegram", "g1")
	x := db.Index("main", nil)
	for range sessions.MaxArchivedPerKey + 3 {
		if _, err := x.Reset(ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := db.Transfer().ExportKeys(ctx, "main")
	if err != nil || len(keys) != 1 {
		t.Fatalf("export: %d keys, %v", len(keys), err)
	}
	want, err := x.Archived(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, keys[0].Archived); diff != "" || len(want) != sessions.MaxArchivedPerKey {
		t.Fatalf("exported archive (-Archived +export):\n%s", diff)
	}
	files := openFiles(t, t.TempDir())
	if _, err := transfer.Copy(ctx, db.Transfer(), files.Transfer(), transfer.Options{}); err != nil {
		t.Fatal(err)
	}
	c, err := transfer.Compare(ctx, db.Transfer(), files.Transfer(), 0)
	noDifferences(t, "postgres vs files", c, err)
}

// ctxTransfer bounds a whole transfer test (a state built, copied and
// compared three ways): ctxT's minute is one operation's bound, and a
// loaded machine took more for all of them (64 s beside seven builds).
func ctxTransfer(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
