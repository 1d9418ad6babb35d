package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DaemonLockKey is the PostgreSQL advisory lock (one bigint key, "gatewayd"
// in ASCII; the migrations' lock is another) that says a daemon uses the
// database. Every daemon holds it shared for its whole life (HoldShared),
// on a connection of its own, so any number of replicas run together;
// `gateway storage migrate` takes it exclusively (LockExclusive) for the
// whole copy, so it refuses while a daemon runs and no daemon starts while
// it copies. The lock is a session lock: it goes away with the connection,
// also when its process is killed.
const DaemonLockKey int64 = 0x6761746577617964

// ErrInUse is LockExclusive's refusal (with errors.Is): a daemon holds the
// database.
var ErrInUse = errors.New("the database is in use by a running gateway")

// ErrMigrating is HoldDaemon's refusal (with errors.Is): a maintenance
// tool holds the database exclusively (LockExclusive).
var ErrMigrating = errors.New("a maintenance tool holds the database (gateway storage migrate, or gateway doctor --fix): start the daemon when it is done")

// HoldShared takes DaemonLockKey shared, waiting while a migration holds
// it exclusively, and keeps it until release is called.
func (db *DB) HoldShared(ctx context.Context) (release func(), err error) {
	return db.holdLock(ctx, `SELECT true FROM pg_advisory_lock_shared($1)`, `SELECT pg_advisory_unlock_shared($1)`, nil)
}

// LockExclusive takes DaemonLockKey exclusively without waiting and keeps
// it until release is called. While a daemon holds it shared the error
// wraps ErrInUse and names the holders' client addresses and backend pids.
func (db *DB) LockExclusive(ctx context.Context) (release func(), err error) {
	release, err = db.holdLock(ctx, `SELECT pg_try_advisory_lock($1)`, `SELECT pg_advisory_unlock($1)`, ErrInUse)
	if errors.Is(err, ErrInUse) {
		if who := db.lockHolders(ctx); who != "" {
			err = fmt.Errorf("%w (%s)", err, who)
		}
	}
	return release, err
}

// holdLock runs sql on a connection of its own, which reports whether it
// got the lock (refused is the error when it did not), and keeps the
// connection until the returned release runs unlockSQL.
func (db *DB) holdLock(ctx context.Context, sql, unlockSQL string, refused error) (func(), error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: daemon lock on %s: %w", db.target, err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, sql, DaemonLockKey).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("pgstore: daemon lock on %s: %w", db.target, err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("pgstore: %s: %w", db.target, refused)
	}
	return func() { releaseKey(conn, unlockSQL, DaemonLockKey) }, nil
}

// release unlocks and returns the connection to the pool, so the lock is
// free when it returns. If the unlock fails the connection is closed,
// which ends its session and every advisory lock it held (the server
// notices a moment later).
func releaseKey(conn *pgxpool.Conn, unlockSQL string, key int64) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	var ok bool
	if err := conn.QueryRow(ctx, unlockSQL, key).Scan(&ok); err != nil || !ok {
		_ = conn.Hijack().Close(ctx)
		return
	}
	conn.Release()
}

// lockHolders describes the sessions holding DaemonLockKey: "backend pid
// 123 from 10.0.0.5, backend pid 456 from local socket". Empty when it
// cannot tell.
func (db *DB) lockHolders(ctx context.Context) string { return db.holdersOf(ctx, DaemonLockKey) }
