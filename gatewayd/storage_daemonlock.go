package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// It also takes the replica lock: exclusively for a daemon that runs
// alone (a second daemon on the database is refused, naming the first),
// shared when replicas are allowed.
func holdDaemonLock(ctx context.Context, b *pgstore.Backend, replicas bool) (sessions.Backend, error) {
	release, err := b.DB().TryHoldShared(ctx)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("storage postgres: %w", err)
	}
	solo, err := holdReplicaLock(ctx, b.DB(), replicas)
	if err != nil {
		release()
		_ = b.Close()
		return nil, fmt.Errorf("storage postgres: %w", err)
	}
	return daemonLocked{Backend: b, release: func() { solo(); release() }}, nil
}

// Close releases the lock, then closes the backend (whose pool waits for
// the lock's connection).
func (d daemonLocked) Close() error {
	d.release()
	return d.Backend.Close()
}

// replicaLockWait is how long a starting daemon retries the replica lock:
// the database ends a killed predecessor's session (and its locks) only
// when it notices the connection is gone, a moment after the kill.
const replicaLockWait = 5 * time.Second

func holdReplicaLock(ctx context.Context, db *pgstore.DB, replicas bool) (func(), error) {
	deadline := time.Now().Add(replicaLockWait)
	for {
		release, err := db.HoldReplicaLock(ctx, replicas)
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
