package filestore

import (
	"time"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// Pairing is the files backend's PairingState: one JSON file per
// channel, <stateDir>/pairing/<channel>.json, the format package access
// wrote before the seam (see internal/pairstate, where it lives so that
// access uses it without reaching sessions).
type Pairing = pairstate.Files

// DefaultPairingLockTimeout bounds waiting for another process's lock of
// a pairing file when NewPairing is given 0.
const DefaultPairingLockTimeout = pairstate.DefaultLockTimeout

// NewPairing returns the files pairing state in dir (created on the
// first update).
func NewPairing(dir string, lockTimeout time.Duration) *Pairing {
	return pairstate.NewFiles(dir, lockTimeout)
}

var _ sessions.PairingState = (*Pairing)(nil)
