package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// openBackend opens a passive backend on a database of its own, closed
// when t ends.
func openBackend(t *testing.T) *sqlitestore.Backend {
	t.Helper()
	b, err := sqlitestore.OpenBackend(context.Background(), sqlitestore.BackendOptions{
		Options: sqlitestore.Options{Path: filepath.Join(t.TempDir(), sqlitestore.FileName), Logger: zaptest.NewLogger(t)},
		Passive: true,
	})
	if err != nil {
		t.Fatalf("OpenBackend: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func TestSearchConformance(t *testing.T) {
	sessionstest.TestSearch(t, func(t *testing.T) sessions.Backend { return openBackend(t) })
}

func TestUsageRebuildConformance(t *testing.T) {
	sessionstest.TestUsageRebuild(t, func(t *testing.T) sessions.Backend { return openBackend(t) })
}
