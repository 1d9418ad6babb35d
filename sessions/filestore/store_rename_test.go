package filestore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func groupKey(t testing.TB, agent, peer string) routing.Key {
	t.Helper()
	k, err := routing.PeerKey(agent, "telegram", "", routing.Group, peer)
	if err != nil {
		t.Fatalf("PeerKey: %v", err)
	}
	return k
}

// TestRenameKeyCrashAnyInstant cuts the files a RenameKey wrote within
// what it appended (at and beside every line end, and every 64th byte), as
// a crash while writing would leave them, and
// opens each: the files load, and the session is under exactly one of the
// two keys (the old one until the move's log line is whole, then the new
// one) — never under both, never lost.
//
// nearFold fills the change log to just below its fold threshold first:
// the batch of the move must still append its line rather than fold the
// log into sessions.json (after a fold's snapshot, a crash before the log
// is emptied re-applies the log's older lines — the old key's last touch
// would bring the session back under it).
func TestRenameKeyCrashAnyInstant(t *testing.T) {
	for _, nearFold := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "nearFold"}[nearFold], func(t *testing.T) {
			t.Parallel()
			testRenameCrash(t, nearFold)
		})
	}
}

func testRenameCrash(t *testing.T, nearFold bool) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{CacheTTL: -1})
	s := mustStore(t, m, "main")
	ctx := context.Background()
	from, to, bystander := groupKey(t, "main", "-100"), groupKey(t, "main", "-1001234"), groupKey(t, "main", "-7")
	e, _ := mustBegin(t, s, from, sessions.Origin{Channel: "telegram", Title: "hello"})
	mustBegin(t, s, bystander, sessions.Origin{Channel: "telegram", Title: "other"})
	if _, err := s.Reset(ctx, from, sessions.ResetOptions{Manual: true}); err != nil {
		t.Fatal(err)
	}
	e, _ = mustBegin(t, s, from, sessions.Origin{Channel: "telegram", Title: "again"})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Dir(s.indexPath)
	for nearFold && fileSize(t, s.deltaPath) < deltaFoldMin-2048 {
		if _, err := s.Patch(ctx, bystander, func(e *sessions.Entry) error {
			e.Label = strings.Repeat("x", 1000) + strconv.FormatInt(fileSize(t, s.deltaPath), 10)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	before := fileSize(t, s.deltaPath)
	// Routine updates of both keys not yet written go out with the move.
	s.AddCounters(from, sessions.Counters{Messages: 3, TotalTokens: 30})
	s.AddCounters(bystander, sessions.Counters{Messages: 1, TotalTokens: 10})
	if _, err := s.RenameKey(ctx, from, to); err != nil {
		t.Fatalf("RenameKey: %v", err)
	}
	log, err := os.ReadFile(s.deltaPath)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(log)) <= before {
		t.Fatalf("RenameKey appended nothing to the change log (%d bytes before, %d after)", before, len(log))
	}
	movedAt := -1
	for _, n := range cutPoints(log, before) {
		crashed := t.TempDir()
		copySessionFiles(t, sdir, filepath.Join(crashed, "agents", "main", "sessions"))
		if err := os.WriteFile(filepath.Join(crashed, "agents", "main", "sessions", deltaName), log[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		cm, err := Open(Options{StateDir: crashed, FlushInterval: -1, CacheTTL: -1})
		if err != nil {
			t.Fatalf("cut at %d: Open: %v", n, err)
		}
		cs, err := cm.Store("main")
		if err != nil {
			t.Fatalf("cut at %d: Store: %v", n, err)
		}
		a, aok, err1 := cs.Get(from)
		b, bok, err2 := cs.Get(to)
		_, cok, err3 := cs.Get(bystander)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("cut at %d: Get: %v %v %v", n, err1, err2, err3)
		}
		switch {
		case aok == bok:
			t.Errorf("cut at %d of %d: session under from %v, under to %v; want exactly one", n, len(log), aok, bok)
		case aok && a.SessionID != e.SessionID, bok && b.SessionID != e.SessionID:
			t.Errorf("cut at %d: session %s/%s, want %s", n, a.SessionID, b.SessionID, e.SessionID)
		case bok && movedAt < 0:
			movedAt = int(n)
		case aok && movedAt >= 0:
			t.Errorf("cut at %d: the session is back under from after it was under to at %d", n, movedAt)
		}
		if !cok {
			t.Errorf("cut at %d: the bystander session is lost", n)
		}
		if bok && len(mustArchived(t, cs, to)) != 1 {
			t.Errorf("cut at %d: the moved session's archived history is not under to", n)
		}
		if err := cm.Close(); err != nil {
			t.Errorf("cut at %d: Close: %v", n, err)
		}
	}
	if movedAt < 0 {
		t.Fatal("the whole change log does not hold the move")
	}
	// The move is one line: whole, it moves; a byte short, it does not.
	if line := string(log[before:movedAt]); strings.Count(line, "\n") != 1 || !strings.Contains(line, `"r":`) {
		t.Errorf("the move's log line is %q, want one line with its source key", line)
	}
}

// cutPoints are the lengths of log from before on where a crash is
// tested: each line end, a byte either side of it, and every 64th byte.
func cutPoints(log []byte, before int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	add := func(n int64) {
		if n >= before && n <= int64(len(log)) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for n := before; n <= int64(len(log)); n++ {
		if n%64 == 0 || n == before || n == int64(len(log)) || log[n-1] == '\n' {
			add(n - 1)
			add(n)
			add(n + 1)
		}
	}
	slices.Sort(out)
	return out
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func mustArchived(t *testing.T, s *Store, k routing.Key) []sessions.Archived {
	t.Helper()
	a, err := s.Archived(k)
	if err != nil {
		t.Fatalf("Archived(%s): %v", k, err)
	}
	return a
}

// copySessionFiles copies the regular files of src (not its lock files) into dst.
func copySessionFiles(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if !de.Type().IsRegular() || strings.HasSuffix(de.Name(), lockExt) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
