package filestore_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// conformanceStores opens the store of each conformance case on the files
// backend, through the seam (Manager.Backend().Store): a state directory
// of its own, or for o.Share the directory of that earlier store (a second
// handle is a second Manager on it, as a second process would open it).
// The flusher runs every 20 ms, so coalesced counters are written while
// the cases race them.
type conformanceStores struct {
	mu   sync.Mutex
	dirs map[sessions.Index]string
}

func (c *conformanceStores) open(t *testing.T, o sessionstest.Options) sessions.AgentStore {
	dir := t.TempDir()
	c.mu.Lock()
	if c.dirs == nil {
		c.dirs = map[sessions.Index]string{}
	}
	if o.Share != nil {
		dir = c.dirs[o.Share]
	}
	c.mu.Unlock()
	m, err := filestore.Open(filestore.Options{StateDir: dir, Now: o.Now, Reset: o.Reset,
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
	c.mu.Lock()
	c.dirs[st] = dir
	c.mu.Unlock()
	return st
}
