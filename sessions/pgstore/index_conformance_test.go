package pgstore

import (
	"context"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's conformance suite against the
// PostgreSQL backend, through Store (the sessions.Index adapter): each case
// gets a fresh database of its own.
func TestIndexConformance(t *testing.T) {
	pgtest.AdminURL(t) // fail in CI, skip elsewhere, before any case starts
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index {
		db, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t), MaxConns: 10,
			Logger: zaptest.NewLogger(t), Now: o.Now})
		if err != nil {
			t.Fatalf("pgstore.Open: %v", err)
		}
		t.Cleanup(db.Close)
		reset := o.Reset
		return db.Store("main", func() sessions.ResetConfig { return reset })
	})
}
