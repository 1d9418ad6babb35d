package filestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestTranscriptConformance runs the transcript conformance suite against
// the files backend (conformanceStores says how each case's store is
// opened).
func TestTranscriptConformance(t *testing.T) {
	var c conformanceStores
	sessionstest.TestTranscripts(t, c.open)
}
