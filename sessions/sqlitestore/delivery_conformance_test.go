package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestDeliveryConformance(t *testing.T) {
	var f files[sessions.Delivery]
	sessionstest.TestDelivery(t, func(t *testing.T, o sessionstest.DeliveryOptions) (sessions.Delivery, func() error) {
		db, path := f.open(t, o.Share, o.Now)
		return f.keep(db.Delivery(), path), func() error { return nil }
	})
}
