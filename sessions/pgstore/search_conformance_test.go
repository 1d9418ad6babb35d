package pgstore

import (
	"context"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestSearchConformance runs the search suite against PostgreSQL, a fresh
// database per case.
func TestSearchConformance(t *testing.T) {
	pgtest.AdminURL(t)
	sessionstest.TestSearch(t, func(t *testing.T) sessions.Backend {
		b, err := OpenBackend(context.Background(), BackendOptions{
			Options: Options{URL: pgtest.NewDatabase(t), MaxConns: 10, Logger: zaptest.NewLogger(t)}, Passive: true})
		if err != nil {
			t.Fatalf("pgstore.OpenBackend: %v", err)
		}
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return b
	})
}
