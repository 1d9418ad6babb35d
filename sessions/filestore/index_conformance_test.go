package filestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's index conformance suite against the
// files backend (conformanceStores says how each case's store is opened).
func TestIndexConformance(t *testing.T) {
	var c conformanceStores
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index { return c.open(t, o) })
}
