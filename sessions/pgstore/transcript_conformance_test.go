package pgstore

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestTranscriptConformance runs the transcript conformance suite against
// the PostgreSQL backend through Store, the sessions.AgentStore
// (conformanceStores says how each case's store is opened).
func TestTranscriptConformance(t *testing.T) {
	pgtest.AdminURL(t)
	var c conformanceStores
	sessionstest.TestTranscripts(t, func(t *testing.T, o sessionstest.Options) sessions.AgentStore { return c.open(t, o) })
}
