package pairstate_test

import (
	"sync"
	"testing"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestFilesConformance runs the pairing suite against Files directly (a
// second handle is a second Files on the directory, with a cache of its
// own, as the CLI beside the daemon has). sessions runs it through the
// files backend too.
func TestFilesConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.PairingState]string{}
	)
	sessionstest.TestPairing(t, func(t *testing.T, share sessions.PairingState) sessions.PairingState {
		mu.Lock()
		defer mu.Unlock()
		dir, ok := dirs[share]
		if !ok {
			dir = t.TempDir()
		}
		f := pairstate.NewFiles(dir, 0)
		dirs[f] = dir
		return f
	})
}
