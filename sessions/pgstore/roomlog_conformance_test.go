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

// TestRoomLogConformance runs the RoomLog suite against PostgreSQL: each
// case gets a database of its own; the next handle is a new pool on the
// same database (the first one closed).
func TestRoomLogConformance(t *testing.T) {
	pgtest.AdminURL(t)
	var (
		mu   sync.Mutex
		urls = map[sessions.RoomLog]string{}
	)
	sessionstest.TestRoomLog(t, func(t *testing.T, o sessionstest.RoomLogOptions) (sessions.RoomLog, func() error) {
		var url string
		if o.Share != nil {
			mu.Lock()
			url = urls[o.Share]
			mu.Unlock()
		} else {
			url = pgtest.NewDatabase(t)
		}
		db, err := Open(context.Background(), Options{URL: url, MaxConns: 10, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("pgstore.Open: %v", err)
		}
		h := db.RoomLog(RoomLogOptions{})
		closeOnce := sync.OnceValue(func() error { db.Close(); return nil })
		t.Cleanup(func() { _ = closeOnce() })
		mu.Lock()
		urls[h] = url
		mu.Unlock()
		return h, closeOnce
	})
}
