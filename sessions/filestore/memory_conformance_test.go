package filestore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestMemoryConformance runs the memory suite against the files backend:
// each case on a state directory of its own, a second handle being a
// second Manager on it.
func TestMemoryConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Memory]string{}
	)
	sessionstest.TestMemory(t, func(t *testing.T, share sessions.Memory) sessions.Memory {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		m := openBackend(t, dir).Memory()
		mu.Lock()
		dirs[m] = dir
		mu.Unlock()
		return m
	})
}

// TestMemoryFilesLayout: a scope is one 0600 file under <stateDir>/memory
// named by a hash, whatever its id says; a damaged or newer file is an
// error naming it.
func TestMemoryFilesLayout(t *testing.T) {
	dir := t.TempDir()
	m := openBackend(t, dir).Memory()
	ctx := t.Context()
	s := sessions.SenderScope("main", "telegram", "../../escape")
	if _, err := m.AddNote(ctx, s, "a note", time.Now(), sessions.MemoryLimits{}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			files = append(files, e.Name())
		}
	}
	if len(files) != 1 || len(files[0]) != 32+len(".json") || strings.Contains(files[0], "escape") {
		t.Fatalf("files in memory/ = %q, want one hashed name", files)
	}
	path := filepath.Join(dir, "memory", files[0])
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s = %v, %v; want 0600", path, st.Mode().Perm(), err)
	}
	for name, body := range map[string]string{"newer": `{"version": 2}`, "damaged": `{"version": 1,`} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Notes(ctx, s); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Notes of a %s file = %v, want an error naming %s", name, err, path)
		}
		if _, err := m.AddNote(ctx, s, "x", time.Now(), sessions.MemoryLimits{}); err == nil {
			t.Errorf("AddNote over a %s file succeeded: the file's notes would be lost", name)
		}
	}
}

// BenchmarkMemoryRead: go test -run '^$' -bench MemoryRead -benchmem ./sessions/filestore ./sessions/pgstore
func BenchmarkMemoryRead(b *testing.B) {
	for _, notes := range []int{10, 50} {
		b.Run(fmt.Sprint(notes, "notes"), func(b *testing.B) {
			m, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), Passive: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = m.Close() })
			sessionstest.BenchMemoryRead(b, m.Backend().Memory(), notes)
		})
	}
}
