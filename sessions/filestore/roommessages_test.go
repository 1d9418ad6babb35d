package filestore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestRoomMessagesConformance runs the room messages suite against the
// files backend (a second handle is a new backend on the same state dir,
// as the next start would open it).
func TestRoomMessagesConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.RoomMessages]string{}
	)
	sessionstest.TestRoomMessages(t, func(t *testing.T, share sessions.RoomMessages) sessions.RoomMessages {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		r := openBackend(t, dir).Messages()
		mu.Lock()
		dirs[r] = dir
		mu.Unlock()
		return r
	})
}

// TestRoomMessageFilesLayout: the record is <stateDir>/history/messages.jsonl
// (0600 in a 0700 dir); a torn last line (a crash mid-write) is dropped
// and cut away before the next note, so the next line is not glued to it.
func TestRoomMessageFilesLayout(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	r := openBackend(t, dir).Messages()
	if err := r.NoteMessages(ctx, "room", []sessions.RoomMessage{{ID: "1", Own: true}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history", "messages.jsonl")
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Fatalf("%s: mode %v, %v; want %v", p, fi.Mode(), err, want)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"room":"room","id":"2","ow`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r2 := openBackend(t, dir).Messages()
	if m, ok, err := r2.RoomMessage(ctx, "room", "1"); err != nil || !ok || !m.Own {
		t.Fatalf("after a torn line: %+v, %v, %v; want message 1, own", m, ok, err)
	}
	if err := r2.NoteMessages(ctx, "room", []sessions.RoomMessage{{ID: "3"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || strings.Contains(string(b), `"ow{`) {
		t.Fatalf("file after the torn line and a note:\n%s\nwant two whole lines", b)
	}
	for _, id := range []string{"1", "3"} {
		if _, ok, err := openBackend(t, dir).Messages().RoomMessage(ctx, "room", id); !ok || err != nil {
			t.Errorf("message %s lost after reopening: %v", id, err)
		}
	}
}

// BenchmarkRoomMessages is sessionstest.BenchRoomMessages on the files
// backend (PostgreSQL: BenchmarkRoomMessages in package pgstore).
func BenchmarkRoomMessages(b *testing.B) {
	m, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), Passive: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	sessionstest.BenchRoomMessages(b, m.Backend().Messages())
}
