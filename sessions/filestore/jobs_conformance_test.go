package filestore_test

import (
	"sync"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestJobsConformance runs the scheduled jobs suite against the files
// backend; a second handle is a second Manager on the state dir, as the
// CLI would open it beside the daemon.
func TestJobsConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.Jobs]string{}
	)
	sessionstest.TestJobs(t, func(t *testing.T, share sessions.Jobs) sessions.Jobs {
		mu.Lock()
		dir, ok := dirs[share]
		mu.Unlock()
		if !ok {
			dir = t.TempDir()
		}
		s := openBackend(t, dir).Jobs()
		mu.Lock()
		dirs[s] = dir
		mu.Unlock()
		return s
	})
}
