package gatewayd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gofrs/flock"
	"go.uber.org/zap"
)

// secureStateDir creates the state dir (0700) and, when it exists with
// group or world access, says so and takes that access away: transcripts,
// tokens and the journal live there.
func secureStateDir(dir string, log *zap.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("gateway: state dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("gateway: state dir: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		log.Warn("state dir was accessible to other users; restricting it to its owner",
			zap.String("state_dir", dir), zap.String("mode", fmt.Sprintf("%04o", perm)))
		if err := os.Chmod(dir, perm&^0o077); err != nil {
			return fmt.Errorf("gateway: state dir: restrict %s: %w", dir, err)
		}
	}
	return nil
}

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
