package sessions_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestTranscriptConformance runs the transcript conformance suite against
// the files backend, through the seam (Manager.Backend().Store): each case
// gets a state directory of its own, and a second handle is a second
// Manager on it, as a second process would open it.
func TestTranscriptConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Index]string{}
	)
	sessionstest.TestTranscripts(t, func(t *testing.T, o sessionstest.Options) sessions.AgentStore {
		dir := t.TempDir()
		if o.Share != nil {
			mu.Lock()
			dir = dirs[o.Share]
			mu.Unlock()
		}
		m, err := sessions.Open(sessions.Options{StateDir: dir, Now: o.Now, Reset: o.Reset,
			FlushInterval: 20 * time.Millisecond, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("sessions.Open: %v", err)
		}
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		st, err := m.Backend().Store("main")
		if err != nil {
			t.Fatalf("Store: %v", err)
		}
		mu.Lock()
		dirs[st] = dir
		mu.Unlock()
		return st
	})
}
