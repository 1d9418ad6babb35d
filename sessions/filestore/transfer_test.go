package filestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/transfer"
)

func openPassive(t *testing.T, dir string) *filestore.Manager {
	t.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: dir, CacheTTL: 0, FlushInterval: time.Hour, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestTransferFilesToFiles copies a state between two state dirs through
// the transfer seam: everything compares equal, transcripts are
// byte-identical, a second copy skips every key, a changed target is a
// conflict naming the key unless Overwrite.
func TestTransferFilesToFiles(t *testing.T) {
	ctx := context.Background()
	srcDir, dstDir := t.TempDir(), t.TempDir()
	src := openPassive(t, srcDir)
	built := sessionstest.BuildState(t, src.Backend().Store)
	dst := openPassive(t, dstDir)

	st, err := transfer.Copy(ctx, src.Transfer(), dst.Transfer(), transfer.Options{})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if st.Agents != len(built.Agents) || st.Sessions != len(built.Current) || st.Keys != len(built.Current)+len(built.Deleted) ||
		st.Copied != st.Keys || st.Skipped != 0 || st.Archived == 0 || st.Lines == 0 {
		t.Fatalf("stats %+v for %d agents, %d current and %d deleted keys", st, len(built.Agents), len(built.Current), len(built.Deleted))
	}
	t.Logf("copied %+v", st)
	cmp, err := transfer.Compare(ctx, src.Transfer(), dst.Transfer(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Differences) > 0 || cmp.Source != cmp.Target || cmp.Source.Lines != st.Lines {
		t.Fatalf("compare: %+v", cmp)
	}
	sameTranscriptFiles(t, srcDir, dstDir)

	// Idempotent: nothing is written the second time.
	again, err := transfer.Copy(ctx, src.Transfer(), dst.Transfer(), transfer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Copied != 0 || again.Skipped != st.Keys || again.Lines != st.Lines {
		t.Fatalf("second copy: %+v", again)
	}

	// A key changed in the target is a conflict, named; nothing is written.
	k := built.Current[0]
	dstStore, err := dst.Store(k.Agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dstStore.Patch(ctx, k, func(e *sessions.Entry) error { e.Label = "changed"; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = transfer.Copy(ctx, src.Transfer(), dst.Transfer(), transfer.Options{})
	var ce *transfer.ConflictError
	if !errors.As(err, &ce) || len(ce.Keys) != 1 || !strings.Contains(err.Error(), k.String()) {
		t.Fatalf("copy onto a changed key: %v, want a conflict naming %s", err, k)
	}
	over, err := transfer.Copy(ctx, src.Transfer(), dst.Transfer(), transfer.Options{Overwrite: true})
	if err != nil || over.Copied != 1 {
		t.Fatalf("copy --overwrite: %+v, %v", over, err)
	}
	if cmp, err := transfer.Compare(ctx, src.Transfer(), dst.Transfer(), 0); err != nil || len(cmp.Differences) > 0 {
		t.Fatalf("after overwrite: %+v, %v", cmp, err)
	}
}

// sameTranscriptFiles checks every transcript (current and archived) of
// a is in b with the same bytes and mode 0600.
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
		got, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if string(got) != string(want) {
			t.Errorf("%s differs", rel)
		}
		if fi, err := os.Stat(filepath.Join(b, rel)); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", rel, fi.Mode().Perm())
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

// TestTransferRefusesHostileNames: an archived transcript name that would
// leave the sessions directory, or a session id that is no UUID, is an
// error, never a path.
func TestTransferRefusesHostileNames(t *testing.T) {
	ctx := context.Background()
	m := openPassive(t, t.TempDir())
	tr := m.Transfer()
	k, err := routing.MainKey("main", "main")
	if err != nil {
		t.Fatal(err)
	}
	id := "0b7c9c52-4c9e-4a43-9d3c-2d8e3f3b2c11"
	for _, file := range []string{
		id + ".jsonl.reset.20260101T000000Z-../../../escape",
		"../" + id + ".jsonl.reset.20260101T000000Z",
		id + ".jsonl.reset.20260101T000000Z/x",
	} {
		if _, err := tr.ExportTranscript(ctx, "main", sessions.TranscriptRef{SessionID: id, File: file}); err == nil {
			t.Errorf("export of %q: no error", file)
		}
		kc := sessions.KeyCopy{KeyState: sessions.KeyState{Key: k.String(),
			Archived: []sessions.Archived{{SessionID: id, File: file, Reason: "cli"}}},
			Transcripts: map[string][][]byte{id: {[]byte(`{"type":"session","id":"` + id + `"}`)}}}
		if err := tr.ImportKey(ctx, "main", kc); err == nil {
			t.Errorf("import of %q: no error", file)
		}
	}
	kc := sessions.KeyCopy{KeyState: sessions.KeyState{Key: k.String(),
		Entry: &sessions.Entry{SessionKey: k.String(), SessionID: "../../x"}}}
	if err := tr.ImportKey(ctx, "main", kc); err == nil || !strings.Contains(err.Error(), "UUID") {
		t.Errorf("import of a bad session id: %v", err)
	}
	if err := tr.ImportKey(ctx, "main", sessions.KeyCopy{KeyState: sessions.KeyState{Key: "agent:other:main"}}); err == nil {
		t.Error("import of another agent's key: no error")
	}
}

// TestExportTranscriptTornAndBadLines: a torn last line is left out (as
// loading ignores it); a bad line inside is an error naming its number.
func TestExportTranscriptTornAndBadLines(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m := openPassive(t, dir)
	if _, err := m.Store("main"); err != nil {
		t.Fatal(err)
	}
	id := "0b7c9c52-4c9e-4a43-9d3c-2d8e3f3b2c11"
	path := filepath.Join(dir, "agents", "main", "sessions", id+".jsonl")
	head := `{"type":"session","version":3,"id":"` + id + `"}` + "\n" + `{"type":"message","id":"a1","parentId":null}` + "\n"
	if err := os.WriteFile(path, []byte(head+`{"type":"mess`), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, err := m.Transfer().ExportTranscript(ctx, "main", sessions.TranscriptRef{SessionID: id})
	if err != nil || len(lines) != 2 {
		t.Fatalf("torn tail: %d lines, %v", len(lines), err)
	}
	if err := os.WriteFile(path, []byte(head+"not json\n"+`{"type":"message","id":"a2"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Transfer().ExportTranscript(ctx, "main", sessions.TranscriptRef{SessionID: id}); err == nil ||
		!strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad line: %v, want an error naming line 3", err)
	}
}
