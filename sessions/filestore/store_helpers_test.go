package filestore

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// fakeClock is an injected clock for reset and maintenance tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openTestManager opens a Manager on dir (a new temp dir when empty) and
// closes it when the test ends, checking for leaked goroutines.
func openTestManager(t testing.TB, dir string, opts Options) *Manager {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	opts.StateDir = dir
	if opts.FlushInterval == 0 {
		opts.FlushInterval = time.Hour // tests flush explicitly unless they say otherwise
	}
	m, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func verifyNoLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
}

func mustStore(t testing.TB, m *Manager, agent string) *Store {
	t.Helper()
	s, err := m.Store(agent)
	if err != nil {
		t.Fatalf("Store(%q): %v", agent, err)
	}
	return s
}

func dmKey(t testing.TB, agent, peer string) routing.Key {
	t.Helper()
	k, err := routing.PeerKey(agent, "telegram", "", routing.Direct, peer)
	if err != nil {
		t.Fatalf("PeerKey: %v", err)
	}
	return k
}

func mustBegin(t testing.TB, s *Store, k routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo) {
	t.Helper()
	e, info, err := s.Begin(context.Background(), k, o)
	if err != nil {
		t.Fatalf("Begin(%s): %v", k, err)
	}
	return e, info
}
