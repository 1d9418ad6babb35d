package gatewayd

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// daemonLocked is the daemon's postgres backend holding
// pgstore.DaemonLockKey shared until Close: every replica holds it, and
// `gateway storage migrate` refuses while any does.
type daemonLocked struct {
	*pgstore.Backend // its other methods (RunLeader, Replicas) stay visible
	release          func()
}

// holdDaemonLock takes the daemon lock for b, or fails while a migration
// holds the database (the daemon then refuses to start, saying so).
func holdDaemonLock(ctx context.Context, b *pgstore.Backend) (sessions.Backend, error) {
	release, err := b.DB().TryHoldShared(ctx)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("storage postgres: %w", err)
	}
	return daemonLocked{Backend: b, release: release}, nil
}

// Close releases the lock, then closes the backend (whose pool waits for
// the lock's connection).
func (d daemonLocked) Close() error {
	d.release()
	return d.Backend.Close()
}
