package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
	// now is the handle's clock; grace is how long after the lock was
	// last found lost the handle takes nothing over (settled).
	now   func() time.Time
	grace time.Duration

	mu     sync.Mutex
	conn   *pgx.Conn // nil while not held
	closed bool
	// lostAt is when the lock was last found lost or could not be taken;
	// zero while it has been held since the handle opened.
	lostAt time.Time
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
		l.lostAt = l.now()
	}
	conn, err := pgx.ConnectConfig(ctx, l.db.pool.Config().ConnConfig)
	if err != nil {
		l.lostAt = l.now()
		return fmt.Errorf("pgstore: delivery owner lock: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, l.owner); err != nil {
		_ = conn.Close(context.Background())
		l.lostAt = l.now()
		return fmt.Errorf("pgstore: delivery owner lock: %w", err)
	}
	l.conn = conn
	return nil
}

// settled reports whether the lock is held and has not been found lost
// within the grace. A handle whose own lock connection was cut (a database
// restart, an outage, a partition) must not trust the absence of other
// owners' locks: they were most likely cut off with it and take theirs
// again within a second of the server's return, and their leases ran on
// without renewals meanwhile. Taking their rows in that second sends a
// reply twice (the live owner delivered it and could not mark it sent).
// After the grace (the lease) a live owner has its lock and its renewed
// leases back, and what is still unheld is truly orphaned.
func (l *ownerLock) settled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil && (l.lostAt.IsZero() || l.now().Sub(l.lostAt) >= l.grace)
}

// drop releases the lock and closes the connection: the owner counts as
// dead from then on.
func (l *ownerLock) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		// Released before the connection closes: the server ends a closed
		// connection's session (and its locks) a moment after, and the
		// others, woken by Close's notification, would find the owner
		// still alive.
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		_ = l.conn.Close(ctx)
		l.conn = nil
	}
}

// errNoOwnerLock is why a handle whose lock is not held refuses to take
// over other handles' rows: it could not tell them from its own.
var errNoOwnerLock = errors.New("owner lock not held")
