package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// sayTo appends user messages to key's current session.
func sayTo(t testing.TB, m *Manager, k routing.Key, texts ...string) sessions.Entry {
	t.Helper()
	st := mustStore(t, m, k.Agent)
	e, _ := mustBegin(t, st, k, sessions.Origin{Channel: "telegram"})
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if _, err := tr.Append(context.Background(), sessions.UserText(s, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// found returns the snippets a search finds, sorted.
func found(t testing.TB, m *Manager, text string) []string {
	t.Helper()
	hits, err := m.Backend().Search().Search(context.Background(), sessions.SearchQuery{Text: text, Limit: sessions.MaxSearchLimit})
	if err != nil {
		t.Fatalf("Search(%q): %v", text, err)
	}
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Snippet)
	}
	slices.Sort(out)
	return out
}

func wantFound(t testing.TB, m *Manager, text string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, found(t, m, text)); diff != "" {
		t.Errorf("Search(%q) (-want +got):\n%s", text, diff)
	}
}

// segmentFiles lists the search dir's segment files.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := SearchFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n := range files {
		if strings.HasPrefix(n, "seg-") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// copyDir copies a state dir as it is on disk now: what a crash at this
// instant leaves.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if strings.HasSuffix(p, ".lock") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSearchIndexPersistsAndCatchesUpAfterCrash(t *testing.T) {
	verifyNoLeaks(t)
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	sayTo(t, m, dmKey(t, "main", "1"), "apples are red")
	wantFound(t, m, "apples", "apples are red")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, dir); len(got) == 0 {
		t.Fatalf("no segment after Close")
	}

	m2 := openTestManager(t, dir, Options{})
	wantFound(t, m2, "apples", "apples are red")
	sayTo(t, m2, dmKey(t, "main", "1"), "apples and pears")
	sayTo(t, m2, dmKey(t, "main", "2"), "pears only")
	// A crash now: the new messages are in the transcripts, not in a segment.
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	m3 := openTestManager(t, crashed, Options{})
	wantFound(t, m3, "pears", "apples and pears", "pears only")
	wantFound(t, m3, "apples", "apples and pears", "apples are red")
	// Appends after the catch-up are indexed once.
	sayTo(t, m3, dmKey(t, "main", "2"), "more pears")
	wantFound(t, m3, "pears", "apples and pears", "pears only", "more pears")
}

func TestSearchIndexRebuiltWhenDamaged(t *testing.T) {
	damages := []struct {
		name string
		fn   func(t *testing.T, search string)
	}{
		{"search dir removed", func(t *testing.T, d string) { must(t, os.RemoveAll(d)) }},
		{"manifest removed", func(t *testing.T, d string) { must(t, os.Remove(filepath.Join(d, manifestName))) }},
		{"manifest garbage", func(t *testing.T, d string) {
			must(t, os.WriteFile(filepath.Join(d, manifestName), []byte("{\"version\":1,\"segm"), 0o600))
		}},
		{"segment byte flipped", func(t *testing.T, d string) {
			p := filepath.Join(d, segmentFiles(t, filepath.Dir(d))[0])
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/2] ^= 0x55
			must(t, os.WriteFile(p, b, 0o600))
		}},
		{"segment truncated", func(t *testing.T, d string) {
			must(t, os.Truncate(filepath.Join(d, segmentFiles(t, filepath.Dir(d))[0]), 40))
		}},
		{"segment missing", func(t *testing.T, d string) {
			must(t, os.Remove(filepath.Join(d, segmentFiles(t, filepath.Dir(d))[0])))
		}},
		{"leftovers of a crash mid-write", func(t *testing.T, d string) {
			must(t, os.WriteFile(filepath.Join(d, "seg-00000099.gsx.tmp"), []byte("GWSRCH1\npartial"), 0o600))
			must(t, os.WriteFile(filepath.Join(d, "seg-00000098.gsx"), []byte("unlisted"), 0o600))
		}},
	}
	for _, dm := range damages {
		t.Run(dm.name, func(t *testing.T) {
			dir := t.TempDir()
			m := openTestManager(t, dir, Options{})
			sayTo(t, m, dmKey(t, "main", "1"), "kiwi one", "kiwi two")
			sayTo(t, m, dmKey(t, "ops", "2"), "kiwi three")
			wantFound(t, m, "kiwi", "kiwi one", "kiwi two", "kiwi three")
			must(t, m.Close())
			dm.fn(t, filepath.Join(dir, searchDirName))
			m2 := openTestManager(t, dir, Options{})
			wantFound(t, m2, "kiwi", "kiwi one", "kiwi two", "kiwi three")
			must(t, m2.Close())
			// What the rebuild wrote loads, and nothing stale is left.
			for _, n := range segmentFiles(t, dir) {
				if _, err := openSegmentClose(filepath.Join(dir, searchDirName, n)); err != nil {
					t.Errorf("segment %s after rebuild: %v", n, err)
				}
			}
			if files, _ := SearchFiles(dir); files["seg-00000099.gsx.tmp"] != 0 || files["seg-00000098.gsx"] != 0 {
				t.Errorf("stale files kept: %v", files)
			}
			m3 := openTestManager(t, dir, Options{})
			wantFound(t, m3, "kiwi", "kiwi one", "kiwi two", "kiwi three")
		})
	}
}

func openSegmentClose(path string) (int, error) {
	s, err := openSegment(path, 1)
	if err != nil {
		return 0, err
	}
	defer s.close()
	return s.nDocs, nil
}

func TestSearchIndexMergeDropsResetSessions(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	ctx := context.Background()
	k1, k2 := dmKey(t, "main", "1"), dmKey(t, "main", "2")
	old := sayTo(t, m, k1, "plum before the reset")
	x := m.search
	must(t, x.wait(ctx))
	for i := range maxSegments + 1 {
		sayTo(t, m, k2, "plum filler "+strings.Repeat("x", i+1))
		must(t, x.flush())
	}
	st := mustStore(t, m, "main")
	if _, err := st.Reset(ctx, k1, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	must(t, x.mergeIfDue(ctx))
	segs := segmentFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments after merge: %v, want one", segs)
	}
	x.segMu.RLock()
	for _, r := range x.segs[0].rows {
		if r.sid == old.SessionID {
			t.Errorf("merged segment still holds the reset session %s", r.sid)
		}
	}
	if n := x.segs[0].nDocs; n != maxSegments+1 {
		t.Errorf("merged segment holds %d messages, want %d", n, maxSegments+1)
	}
	x.segMu.RUnlock()
	if got := found(t, m, "plum"); len(got) != maxSegments+1 || slices.Contains(got, "plum before the reset") {
		t.Errorf("after reset and merge: %v", got)
	}
	// Switching back indexes the session again.
	if _, err := st.Switch(ctx, k1, old.SessionID); err != nil {
		t.Fatal(err)
	}
	if got := found(t, m, "reset"); !slices.Equal(got, []string{"plum before the reset"}) {
		t.Errorf("after switching back: %v", got)
	}
	must(t, m.Close())
	m2 := openTestManager(t, dir, Options{})
	if got := found(t, m2, "plum"); len(got) != maxSegments+2 || !slices.Contains(got, "plum before the reset") {
		t.Errorf("after restart: %v, want k2's %d messages and the switched-back one", got, maxSegments+1)
	}
}

func TestSearchPassiveReaderWritesNothing(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	sayTo(t, m, dmKey(t, "main", "1"), "fig tree")
	wantFound(t, m, "fig", "fig tree") // loaded: the daemon's index is live, tail unflushed
	before, err := SearchFiles(dir)
	must(t, err)
	cli := openTestManager(t, dir, Options{Passive: true})
	wantFound(t, cli, "fig", "fig tree")
	sayTo(t, m, dmKey(t, "main", "1"), "fig jam")
	wantFound(t, cli, "fig", "fig tree") // a reader loads once
	must(t, cli.Close())
	after, err := SearchFiles(dir)
	must(t, err)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("a passive reader changed the index files (-before +after):\n%s", diff)
	}
	wantFound(t, m, "fig", "fig tree", "fig jam")
}

// TestSearchNewestFirstWhateverTheAppendOrder: messages appended with
// timestamps out of order come back newest first, from the in-memory tail
// (unsorted) and after a flush (a segment numbers its docs by time) and a
// merge.
func TestSearchNewestFirstWhateverTheAppendOrder(t *testing.T) {
	m := openTestManager(t, "", Options{})
	ctx := context.Background()
	st := mustStore(t, m, "main")
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	order := []int{5, 1, 9, 3, 7, 0, 8, 2, 6, 4}
	for i, n := range order {
		e, _ := mustBegin(t, st, dmKey(t, "main", strconv.Itoa(i%3)), sessions.Origin{})
		tr, err := st.TranscriptOf(e)
		must(t, err)
		_, err = tr.Append(ctx, sessions.UserText(fmt.Sprintf("quince %d", n), base.Add(time.Duration(n)*time.Minute)))
		must(t, err)
	}
	check := func(when string) {
		t.Helper()
		hits, err := m.Backend().Search().Search(ctx, sessions.SearchQuery{Text: "quince", Limit: 4})
		must(t, err)
		var got []string
		for _, h := range hits {
			got = append(got, h.Snippet)
		}
		if want := []string{"quince 9", "quince 8", "quince 7", "quince 6"}; !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", when, got, want)
		}
		hits, err = m.Backend().Search().Search(ctx, sessions.SearchQuery{Text: "quince", Since: base.Add(7 * time.Minute)})
		must(t, err)
		if len(hits) != 3 {
			t.Errorf("%s: since: %d hits, want 3", when, len(hits))
		}
	}
	check("in memory")
	x := m.search
	must(t, x.flush())
	check("in a segment")
	e, _ := mustBegin(t, st, dmKey(t, "main", "0"), sessions.Origin{})
	tr, err := st.TranscriptOf(e)
	must(t, err)
	_, err = tr.Append(ctx, sessions.UserText("quince old", base.Add(-time.Hour)))
	must(t, err)
	must(t, x.flush())
	must(t, x.merge(ctx))
	check("merged")
}

// TestSearchRowOfKnownSessionAllocatesNothing: finding the row of a
// session the index already holds (every append after its first) builds
// no key string; a new session gets its row once, and keeps it.
func TestSearchRowOfKnownSessionAllocatesNothing(t *testing.T) {
	m := newMemSegment()
	sid := "0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3b4c"
	first := m.row("main", sid)
	if n := testing.AllocsPerRun(100, func() {
		if r := m.row("main", sid); r != first {
			t.Fatalf("row %d, want %d", r, first)
		}
	}); n != 0 {
		t.Errorf("row of a known session: %v allocations, want 0", n)
	}
	if other := m.row("other", sid); other == first || m.row("other", sid) != other {
		t.Errorf("another agent's session: row %d (first %d)", other, first)
	}
}
