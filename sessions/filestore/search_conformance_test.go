package filestore_test

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestSearchConformance runs the search suite against the files backend.
func TestSearchConformance(t *testing.T) {
	sessionstest.TestSearch(t, func(t *testing.T) sessions.Backend {
		m, err := filestore.Open(filestore.Options{StateDir: t.TempDir(), FlushInterval: 20 * time.Millisecond,
			Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("sessions.Open: %v", err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return m.Backend()
	})
}
