package filestore

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestCheckLocksProcessLocks: the ingress journal's and the room
// history's locks are held by the daemon for as long as it runs, by
// design; `gateway doctor` beside a daemon up for more than five minutes
// reports no long-held lock for them (it did, on every healthy store).
func TestCheckLocksProcessLocks(t *testing.T) {
	state := t.TempDir()
	j := openJournal(filepath.Join(state, "ingress"), time.Now, zap.NewNop())
	t.Cleanup(func() { _ = j.close() })
	h := OpenRoomHistory(filepath.Join(state, "history"), zap.NewNop())
	t.Cleanup(func() { _ = h.Close() })
	ps, err := checkLocks(state, time.Now().Add(2*DefaultMaxHold))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Errorf("a lock held for the process's life reported: %s %s: %s", p.Code, p.Path, p.Message)
	}
}
