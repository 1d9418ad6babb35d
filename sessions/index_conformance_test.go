package sessions_test

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's conformance suite against the files
// backend: each case gets a Manager on a state directory of its own. The
// flusher runs every 20 ms, so coalesced counters are written while the
// cases race them (Flush is still called where a case needs durability).
func TestIndexConformance(t *testing.T) {
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index {
		m, err := sessions.Open(sessions.Options{StateDir: t.TempDir(), Now: o.Now, Reset: o.Reset,
			FlushInterval: 20 * time.Millisecond, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("sessions.Open: %v", err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		st, err := m.Store("main")
		if err != nil {
			t.Fatalf("Store: %v", err)
		}
		return st
	})
}
