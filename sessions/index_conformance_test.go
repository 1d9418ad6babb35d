package sessions_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestIndexConformance runs the seam's conformance suite against the files
// backend: each case gets a Manager on a state directory of its own (a
// second handle is a second Manager on the same directory, as a second
// process would open it). The flusher runs every 20 ms, so coalesced
// counters are written while the cases race them.
func TestIndexConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Index]string{}
	)
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index {
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
		st, err := m.Store("main")
		if err != nil {
			t.Fatalf("Store: %v", err)
		}
		mu.Lock()
		dirs[st] = dir
		mu.Unlock()
		return st
	})
}
