package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// daemonLocked is the daemon's postgres backend holding its locks
// (pgstore.HoldDaemon, one connection) until Close: `gateway storage
// migrate` refuses while any daemon holds them, and a second daemon is
// refused unless every daemon on the database allows replicas.
type daemonLocked struct {
	*pgstore.Backend // its other methods (RunLeader, Replicas) stay visible
	release          func()
}

// holdDaemonLock takes the daemon's locks for b (pgstore.HoldDaemon), or
// closes b and fails while a migration or, unless replicas, another daemon
// holds the database (the daemon then refuses to start, saying so).
func holdDaemonLock(ctx context.Context, b *pgstore.Backend, replicas bool) (sessions.Backend, error) {
	release, err := holdDaemon(ctx, b.DB(), replicas)
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

// replicaLockWait is how long a starting daemon retries while another
// daemon holds the database:
// the database ends a killed predecessor's session (and its locks) only
// when it notices the connection is gone, a moment after the kill.
const replicaLockWait = 5 * time.Second

func holdDaemon(ctx context.Context, db *pgstore.DB, replicas bool) (func(), error) {
	deadline := time.Now().Add(replicaLockWait)
	for {
		release, err := db.HoldDaemon(ctx, replicas)
		if err == nil || !errors.Is(err, pgstore.ErrOtherDaemon) || time.Now().After(deadline) {
			return release, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
