package sessions

import (
	"time"

	"github.com/gateway/gateway/internal/pairstate"
)

// PairingFiles is the files backend's PairingState: one JSON file per
// channel, <stateDir>/pairing/<channel>.json, the format package access
// wrote before the seam (see internal/pairstate, where it lives so that
// access uses it without reaching sessions).
type PairingFiles = pairstate.Files

// DefaultPairingLockTimeout bounds waiting for another process's lock of
// a pairing file when NewPairingFiles is given 0.
const DefaultPairingLockTimeout = pairstate.DefaultLockTimeout

// NewPairingFiles returns the files pairing state in dir (created on the
// first update).
func NewPairingFiles(dir string, lockTimeout time.Duration) *PairingFiles {
	return pairstate.NewFiles(dir, lockTimeout)
}

var _ PairingState = (*PairingFiles)(nil)
