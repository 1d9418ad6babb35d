package pgstore

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's conformance suite against the
// PostgreSQL backend, through Store (the sessions.Index adapter): each case
// gets a fresh database of its own (a second handle is a second pool on
// the same database, as another replica would open it).
func TestIndexConformance(t *testing.T) {
	pgtest.AdminURL(t) // fail in CI, skip elsewhere, before any case starts
	var (
		mu   sync.Mutex
		urls = map[sessions.Index]string{}
	)
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index {
		var url string
		if o.Share != nil {
			mu.Lock()
			url = urls[o.Share]
			mu.Unlock()
		} else {
			url = pgtest.NewDatabase(t)
		}
		db, err := Open(context.Background(), Options{URL: url, MaxConns: 10, Logger: zaptest.NewLogger(t), Now: o.Now})
		if err != nil {
			t.Fatalf("pgstore.Open: %v", err)
		}
		t.Cleanup(db.Close)
		reset := o.Reset
		st := db.Store("main", func() sessions.ResetConfig { return reset })
		mu.Lock()
		urls[st] = url
		mu.Unlock()
		return st
	})
}
