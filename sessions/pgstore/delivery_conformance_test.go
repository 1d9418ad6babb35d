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

// TestDeliveryConformance runs the Delivery suite against PostgreSQL: each
// case gets a database of its own; the next handle is a new pool and
// Delivery on the same database (the first one closed, as a process exit
// ends its connections).
func TestDeliveryConformance(t *testing.T) {
	pgtest.AdminURL(t)
	var (
		mu   sync.Mutex
		urls = map[sessions.Delivery]string{}
	)
	sessionstest.TestDelivery(t, func(t *testing.T, o sessionstest.DeliveryOptions) (sessions.Delivery, func() error) {
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
		d := db.Delivery(DeliveryOptions{Now: o.Now})
		closeOnce := sync.OnceValue(func() error {
			err := d.Close()
			db.Close()
			return err
		})
		t.Cleanup(func() { _ = closeOnce() })
		mu.Lock()
		urls[d] = url
		mu.Unlock()
		return d, closeOnce
	})
}
