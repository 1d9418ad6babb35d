package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Owner liveness: each Delivery handle holds a session-level advisory lock
// keyed by its owner id (hashtextextended(owner, 0)) on a connection of its
// own for as long as it is open. The server drops the lock the moment that
// connection ends, so when the process dies (kill -9, crash, lost host)
// its owner is dead at once, without waiting for a lease to run out.
// Pending, Replies, Drafts and Orphans take over only rows whose owner
// holds no such lock.

// In pg_locks a lock on one bigint key shows with the key's high 32 bits
// in classid, its low 32 bits in objid and objsubid 1 (the two-int4 form
// has objsubid 2): liveOwnersCTE decodes them.

// ownerLock is the connection holding a handle's advisory lock.
type ownerLock struct {
	db    *DB
	owner string
	log   *zap.Logger

	mu     sync.Mutex
	conn   *pgx.Conn // nil while not held
	closed bool
}

// hold takes the lock on a new connection unless it is held and that
// connection still answers. The loop calls it every second, so a lock lost
// with its connection (a database restart) is taken again within a second.
func (l *ownerLock) hold(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.conn != nil {
		if err := l.conn.Ping(ctx); err == nil {
			return nil
		}
		l.log.Warn("delivery owner lock connection lost; taking the lock again", zap.String("owner", l.owner))
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
	conn, err := pgx.ConnectConfig(ctx, l.db.pool.Config().ConnConfig)
	if err != nil {
		return fmt.Errorf("pgstore: delivery owner lock: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, l.owner); err != nil {
		_ = conn.Close(context.Background())
		return fmt.Errorf("pgstore: delivery owner lock: %w", err)
	}
	l.conn = conn
	return nil
}

// drop closes the connection: the server releases the lock with the
// session, and the owner counts as dead from then on.
func (l *ownerLock) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		_ = l.conn.Close(ctx)
		l.conn = nil
	}
}

// errNoOwnerLock is why a handle whose lock is not held refuses to take
// over other handles' rows: it could not tell them from its own.
var errNoOwnerLock = errors.New("owner lock not held")
