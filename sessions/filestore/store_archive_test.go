package filestore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// agedArchive writes an archive list of keys group keys with
// MaxArchivedPerKey records each (a month of daily resets) into st's
// directory, as archive.json, and returns its size.
func agedArchive(t testing.TB, st *Store, keys int) int64 {
	t.Helper()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	arch := map[string][]sessions.Archived{}
	for i := range keys {
		k, err := routing.PeerKey(st.agentID, "telegram", "", routing.Group, strconv.Itoa(-100000-i))
		if err != nil {
			t.Fatal(err)
		}
		var l []sessions.Archived
		for j := range sessions.MaxArchivedPerKey {
			id := "00000000-0000-4000-8000-" + strconv.Itoa(100000000000+i*100+j)
			l = append(l, sessions.Archived{SessionID: id, Reason: "daily", ArchivedAt: at.Add(time.Duration(j) * time.Hour),
				File: id + ".jsonl.reset." + archiveTS(at), Title: "a chat", SessionStartedAt: at, UpdatedAt: at,
				MessageCount: 40, TotalTokens: 12000})
		}
		arch[k.String()] = l
	}
	b, err := json.Marshal(arch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.archivePath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// archiveWrites tracks the bytes written to an agent's archive files:
// archive.json counts whole when it was replaced (another inode), the
// change log by what it grew.
type archiveWrites struct {
	dir     string
	ino     uint64
	logSize int64
	total   int64
}

func (w *archiveWrites) look(t testing.TB) {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(w.dir, archiveName)); err == nil {
		if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != w.ino {
			w.total += fi.Size()
			w.ino = ino
		}
	}
	fi, err := os.Stat(filepath.Join(w.dir, archiveLogName))
	size := int64(0)
	if err == nil {
		size = fi.Size()
	}
	if size > w.logSize {
		w.total += size - w.logSize
	}
	w.logSize = size
}

// TestArchiveChangeCostDoesNotGrowWithTheList: every reset, delete or
// switch changes a key's archive history. It rewrote the agent's whole
// archive list, a month of every key's resets (up to 20 records each
// for 30 days), and decoded it first: 1.5 s a reset under the store lock
// at 10,000 keys. A change now appends the key's list to a change log,
// folded into archive.json only once the log grew by half of it.
func TestArchiveChangeCostDoesNotGrowWithTheList(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	st := mustStore(t, m, "main")
	size := agedArchive(t, st, 1000)
	w := &archiveWrites{dir: st.dir}
	w.look(t)
	w.total = 0
	ctx := context.Background()
	k := dmKey(t, "main", "7")
	const resets = 20
	for range resets {
		mustBegin(t, st, k, sessions.Origin{Channel: "telegram"})
		if _, err := st.Reset(ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
			t.Fatal(err)
		}
		w.look(t)
	}
	if limit := int64(resets * 8 << 10); w.total > limit {
		t.Errorf("%d resets wrote %d bytes of archive files (the list is %d): want at most %d", resets, w.total, size, limit)
	}
	arch, err := st.Archived(k)
	if err != nil {
		t.Fatal(err)
	}
	if len(arch) != sessions.MaxArchivedPerKey {
		t.Errorf("%d archived sessions of %s, want %d", len(arch), k, sessions.MaxArchivedPerKey)
	}
}

// TestArchiveLogReadByOthersFoldedAndAfterRestart: the archive list a
// store changes through its change log is what another process reads, a
// restart reads, and what archive.json holds after a fold; a torn last
// line (a crash while appending) is ignored and cut by the next append.
func TestArchiveLogReadByOthersFoldedAndAfterRestart(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir, Options{})
	st := mustStore(t, m, "main")
	agedArchive(t, st, 3)
	other := openTestManager(t, dir, Options{})
	ost := mustStore(t, other, "main")
	ctx := context.Background()
	k := dmKey(t, "main", "7")
	var ids []string
	reset := func() {
		t.Helper()
		e, _ := mustBegin(t, st, k, sessions.Origin{Channel: "telegram"})
		if _, err := st.Reset(ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
			t.Fatal(err)
		}
		ids = append([]string{e.SessionID}, ids...)
	}
	check := func(when string, s *Store) {
		t.Helper()
		arch, err := s.Archived(k)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range arch {
			got = append(got, a.SessionID)
		}
		want := ids[:min(len(ids), sessions.MaxArchivedPerKey)]
		if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) || (len(got) > 0 && got[len(got)-1] != want[len(want)-1]) {
			t.Errorf("%s: archived %v, want %v", when, got, want)
		}
		m, err := readArchiveFile(s.archivePath)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 4 {
			t.Errorf("%s: the archive list holds %d keys, want the 3 aged and %s", when, len(m), k)
		}
	}
	reset()
	reset()
	check("this process", st)
	check("another process", ost)

	logPath := filepath.Join(st.dir, archiveLogName)
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"k":"agent:main:torn","l":[{"sessionId":`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	check("torn last line", ost)
	reset()
	check("appended after a torn line", ost)

	folded := false
	for range 200 {
		reset()
		if fi, err := os.Stat(logPath); err == nil && fi.Size() == 0 {
			folded = true
			break
		}
	}
	if !folded {
		t.Fatal("the archive change log was never folded")
	}
	check("folded", st)
	check("folded, another process", ost)
	reset()
	must(t, m.Close())
	must(t, other.Close())
	m2 := openTestManager(t, dir, Options{})
	check("restart", mustStore(t, m2, "main"))
}

// BenchmarkStoreResetAgedArchive is a reset (Begin, then Reset) of one key
// beside an archive list of a month of daily resets: none, and 10,000 keys
// with MaxArchivedPerKey records each (65 MB as archive.json), read once
// before (a process's first use reads it whole).
func BenchmarkStoreResetAgedArchive(b *testing.B) {
	for _, keys := range []int{0, 10000} {
		b.Run(strconv.Itoa(keys)+"keys", func(b *testing.B) {
			m := openTestManager(b, b.TempDir(), Options{})
			st := mustStore(b, m, "main")
			if keys > 0 {
				agedArchive(b, st, keys)
			}
			ctx := context.Background()
			k := dmKey(b, "main", "7")
			if _, err := st.Archived(k); err != nil { // the list's first read, once a process
				b.Fatal(err)
			}
			for b.Loop() {
				mustBegin(b, st, k, sessions.Origin{Channel: "telegram"})
				if _, err := st.Reset(ctx, k, sessions.ResetOptions{Manual: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
