package main

import (
	"fmt"
	"os"

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
