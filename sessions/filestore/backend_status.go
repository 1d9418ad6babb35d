package filestore

import (
	"fmt"
	"os"
)

// probeStatus is the files backend's health probe. The daemon's Manager
// checks that its ingress journal takes writes. A passive Manager (the CLI
// beside a running daemon, which holds the journal's lock) must not open
// the journal: it checks that the state dir can be read.
func (m *Manager) probeStatus() error {
	if m.opts.Passive {
		if _, err := os.ReadDir(m.opts.StateDir); err != nil {
			return fmt.Errorf("sessions: state dir: %w", err)
		}
		return nil
	}
	return m.Journal().Health()
}
