package pgstore

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's index conformance suite against
// the PostgreSQL backend through Store (conformanceStores says how each
// case's store is opened).
func TestIndexConformance(t *testing.T) {
	pgtest.AdminURL(t) // fail at once without a server, before any case starts
	var c conformanceStores
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index { return c.open(t, o) })
}
