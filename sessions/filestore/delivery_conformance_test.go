package filestore_test

import (
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestDeliveryConformance runs the Delivery suite against the files
// journal: each case gets a Manager on a state directory of its own; the
// next handle is a new Manager on the same directory (the first one
// closed, as a process exit releases the journal's lock).
func TestDeliveryConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Delivery]string{}
	)
	sessionstest.TestDelivery(t, func(t *testing.T, o sessionstest.DeliveryOptions) (sessions.Delivery, func() error) {
		dir := t.TempDir()
		if o.Share != nil {
			mu.Lock()
			dir = dirs[o.Share]
			mu.Unlock()
		}
		m, err := filestore.Open(filestore.Options{StateDir: dir, Now: o.Now, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("sessions.Open: %v", err)
		}
		closeOnce := sync.OnceValue(m.Close)
		t.Cleanup(func() { _ = closeOnce() })
		j := m.Journal()
		if err := j.Health(); err != nil {
			t.Fatalf("journal: %v", err)
		}
		mu.Lock()
		dirs[j] = dir
		mu.Unlock()
		return j, closeOnce
	})
}
