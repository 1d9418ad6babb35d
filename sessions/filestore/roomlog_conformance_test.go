package filestore_test

import (
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestRoomLogConformance runs the RoomLog suite against the files room
// history: each case gets a directory of its own; the next handle opens
// the same directory after the first one closed.
func TestRoomLogConformance(t *testing.T) {
	var (
		mu   sync.Mutex
		dirs = map[sessions.RoomLog]string{}
	)
	sessionstest.TestRoomLog(t, func(t *testing.T, o sessionstest.RoomLogOptions) (sessions.RoomLog, func() error) {
		dir := t.TempDir()
		if o.Share != nil {
			mu.Lock()
			dir = dirs[o.Share]
			mu.Unlock()
		}
		h := filestore.OpenRoomHistory(dir, zaptest.NewLogger(t))
		closeOnce := sync.OnceValue(h.Close)
		t.Cleanup(func() { _ = closeOnce() })
		mu.Lock()
		dirs[h] = dir
		mu.Unlock()
		return h, closeOnce
	})
}
