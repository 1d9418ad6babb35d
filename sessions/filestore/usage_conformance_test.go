package filestore_test

import (
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestUsageConformance runs the usage ledger suite against the files
// backend: each case on a state directory of its own, a second handle
// being a second Manager on the same directory.
func TestUsageConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.UsageLog]string{}
	)
	sessionstest.TestUsage(t, func(t *testing.T, share sessions.UsageLog) sessions.UsageLog {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		u := openBackend(t, dir).Usage()
		mu.Lock()
		dirs[u] = dir
		mu.Unlock()
		return u
	})
}

// TestUsageRebuildConformance rebuilds the ledger from files transcripts.
func TestUsageRebuildConformance(t *testing.T) {
	sessionstest.TestUsageRebuild(t, func(t *testing.T) sessions.Backend {
		m, err := filestore.Open(filestore.Options{StateDir: t.TempDir(), Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m.Backend()
	})
}
