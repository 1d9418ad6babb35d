package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gofrs/flock"
)

// pidLockName is the file in the state dir a running daemon holds locked.
const pidLockName = "gateway.pid"

// lockStateDir makes the daemon the only one on its state dir (SPEC §3.7):
// it holds an exclusive flock on <stateDir>/gateway.pid, which names its
// pid, until release. A second daemon gets an error naming the holder.
func lockStateDir(stateDir string) (release func(), err error) {
	path := filepath.Join(stateDir, pidLockName)
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("gateway: lock state dir: %w", err)
	}
	if !ok {
		holder := "unknown pid"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); perr == nil {
				holder = "pid " + strconv.Itoa(pid)
			}
		}
		return nil, fmt.Errorf("gateway: another gateway (%s) is running on state dir %s (it holds %s); stop it first, or give this one its own stateDir",
			holder, stateDir, path)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("gateway: lock state dir: write pid: %w", err)
	}
	return func() {
		_ = os.Truncate(path, 0)
		_ = fl.Unlock()
	}, nil
}
