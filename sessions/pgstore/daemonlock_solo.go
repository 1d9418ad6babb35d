package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ReplicaLockKey is the advisory lock ("replicas" in ASCII) that says how
// daemons share the database: a daemon that runs alone (the default) holds
// it exclusively, each of several replicas (storage.postgres.replicas)
// holds it shared. So a second daemon on a database is refused unless
// every daemon on it allows replicas.
const ReplicaLockKey int64 = 0x7265706c69636173

// ErrOtherDaemon is HoldDaemon's refusal (with errors.Is).
var ErrOtherDaemon = errors.New("another gateway daemon uses this database")

// HoldDaemon takes the locks a running daemon holds for its whole life,
// on one connection of its own and without waiting: DaemonLockKey shared
// (refused with ErrMigrating while a migration holds it) and
// ReplicaLockKey, shared when replicas is true, else exclusively (refused
// with ErrOtherDaemon, naming the holders and saying how to run replicas).
// release gives both up; so does the death of the process.
func (db *DB) HoldDaemon(ctx context.Context, replicas bool) (release func(), err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: daemon lock on %s: %w", db.target, err)
	}
	try := func(sql string, key int64) (bool, error) {
		var ok bool
		err := conn.QueryRow(ctx, sql, key).Scan(&ok)
		return ok, err
	}
	ok, err := try(`SELECT pg_try_advisory_lock_shared($1)`, DaemonLockKey)
	if err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, fmt.Errorf("pgstore: daemon lock on %s: %w", db.target, err)
		}
		return nil, fmt.Errorf("pgstore: %s: %w", db.target, ErrMigrating)
	}
	replicaSQL, replicaUnlock := `SELECT pg_try_advisory_lock($1)`, `SELECT pg_advisory_unlock($1)`
	if replicas {
		replicaSQL, replicaUnlock = `SELECT pg_try_advisory_lock_shared($1)`, `SELECT pg_advisory_unlock_shared($1)`
	}
	const daemonUnlock = `SELECT pg_advisory_unlock_shared($1)`
	ok, err = try(replicaSQL, ReplicaLockKey)
	if err != nil || !ok {
		releaseKey(conn, daemonUnlock, DaemonLockKey)
		if err != nil {
			return nil, fmt.Errorf("pgstore: replica lock on %s: %w", db.target, err)
		}
		hint := "stop it first, or set storage.postgres.replicas: true on every daemon that shares the database"
		if who := db.holdersOf(ctx, ReplicaLockKey); who != "" {
			return nil, fmt.Errorf("pgstore: %s: %w (%s): %s", db.target, ErrOtherDaemon, who, hint)
		}
		return nil, fmt.Errorf("pgstore: %s: %w: %s", db.target, ErrOtherDaemon, hint)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		var ok bool
		if err := conn.QueryRow(ctx, replicaUnlock, ReplicaLockKey).Scan(&ok); err != nil || !ok {
			_ = conn.Hijack().Close(ctx) // ends the session: both locks go
			return
		}
		releaseKey(conn, daemonUnlock, DaemonLockKey)
	}, nil
}

// holdersOf describes the sessions holding advisory lock key, as
// lockHolders does for DaemonLockKey.
func (db *DB) holdersOf(ctx context.Context, key int64) string {
	rows, err := db.pool.Query(ctx, `SELECT a.pid, COALESCE(host(a.client_addr), 'local socket'), COALESCE(a.application_name, '')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1
		ORDER BY a.pid`, key)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var who []string
	for rows.Next() {
		var (
			pid       int32
			from, app string
		)
		if rows.Scan(&pid, &from, &app) == nil {
			w := fmt.Sprintf("backend pid %d from %s", pid, from)
			if app != "" {
				w += " (" + app + ")"
			}
			who = append(who, w)
		}
	}
	return strings.Join(who, ", ")
}
