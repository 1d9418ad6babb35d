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

// conformanceStores opens the Store of each conformance case on
// PostgreSQL: a fresh database of its own, or for o.Share the database of
// that earlier store (a second handle is a second pool, with its own group
// commit, on it, as another replica would open it).
type conformanceStores struct {
	mu   sync.Mutex
	urls map[sessions.Index]string
}

func (c *conformanceStores) open(t *testing.T, o sessionstest.Options) *Store {
	c.mu.Lock()
	if c.urls == nil {
		c.urls = map[sessions.Index]string{}
	}
	url, shared := c.urls[o.Share]
	c.mu.Unlock()
	if o.Share == nil || !shared {
		url = pgtest.NewDatabase(t)
	}
	db, err := Open(context.Background(), Options{URL: url, MaxConns: 10, Logger: zaptest.NewLogger(t), Now: o.Now})
	if err != nil {
		t.Fatalf("pgstore.Open: %v", err)
	}
	t.Cleanup(db.Close)
	reset := o.Reset
	st := db.Store("main", func() sessions.ResetConfig { return reset })
	c.mu.Lock()
	c.urls[st] = url
	c.mu.Unlock()
	return st
}
