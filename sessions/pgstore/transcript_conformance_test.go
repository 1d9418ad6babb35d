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

// TestTranscriptConformance runs the transcript conformance suite against
// the PostgreSQL backend through Store (the sessions.AgentStore): each case
// gets a fresh database, and a second handle is a second pool (with its own
// group commit) on it, as another replica would open it.
func TestTranscriptConformance(t *testing.T) {
	pgtest.AdminURL(t)
	var (
		mu   sync.Mutex
		urls = map[sessions.Index]string{}
	)
	sessionstest.TestTranscripts(t, func(t *testing.T, o sessionstest.Options) sessions.AgentStore {
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
