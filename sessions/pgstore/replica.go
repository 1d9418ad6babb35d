package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Replica identity (issue 13): every daemon on the database is a replica
// with an id (a UUID per process start unless configured), registered in
// the replicas table with a heartbeat, so gateway doctor can list the
// replicas and the leases each holds. The id is the holder of its leases.

// HeartbeatEvery is how often a replica refreshes its seen_at.
const HeartbeatEvery = 5 * time.Second

// forgetReplicasAfter is how long a replica that stopped without
// deregistering (it crashed) stays listed.
const forgetReplicasAfter = 24 * time.Hour

// Replica is one registered replica.
type Replica struct {
	ID        string    `json:"id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"startedAt"`
	SeenAt    time.Time `json:"seenAt"`
	// Age is how long ago, by the database's clock, it was last seen.
	Age time.Duration `json:"age"`
}

// Stale reports a replica not seen for three heartbeats: it crashed, hangs
// or lost the database.
func (r Replica) Stale() bool { return r.Age > 3*HeartbeatEvery }

// replicaState is a Backend's identity and, for a daemon (not Passive), its
// heartbeat goroutine.
type replicaState struct {
	id      string
	leases  *Leases
	ttl     time.Duration
	stop    context.CancelFunc
	done    chan struct{}
	started bool // registered: deregister at stop
}

// newReplica sets up the backend's identity; unless o.Passive it
// registers the replica and starts its heartbeat, which stop ends.
func newReplica(db *DB, o BackendOptions) *replicaState {
	id := o.ReplicaID
	if id == "" {
		id = uuid.NewString()
	}
	r := &replicaState{id: id, leases: db.Leases(id), ttl: o.LeaderTTL, done: make(chan struct{})}
	if r.ttl <= 0 {
		r.ttl = DefaultLeaderTTL
	}
	if o.KeepLeasesOnStop {
		r.leases = r.leases.WithoutRelease()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	if o.Passive {
		close(r.done)
		return r
	}
	r.started = true
	go r.heartbeat(ctx, db)
	return r
}

// heartbeat registers the replica and refreshes seen_at every
// HeartbeatEvery until ctx ends. Failures are logged (the database may be
// away for a while) and retried at the next beat.
func (r *replicaState) heartbeat(ctx context.Context, db *DB) {
	defer close(r.done)
	log := db.log.With(zap.String("replica_id", r.id))
	host, _ := os.Hostname()
	registered := false
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, HeartbeatEvery)
		var err error
		if !registered {
			if err = register(cctx, db, r.id, host); err == nil {
				registered = true
				log.Info("replica registered", zap.String("host", host), zap.Int("pid", os.Getpid()))
			}
		} else if err = beat(cctx, db, r.id); errors.Is(err, errNotRegistered) {
			// Its row was removed while it lived (paused past
			// forgetReplicasAfter, or cleared by an operator): register
			// again rather than fail every beat from now on.
			if err = register(cctx, db, r.id, host); err == nil {
				log.Info("replica registered again", zap.String("host", host), zap.Int("pid", os.Getpid()))
			}
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Warn("replica heartbeat failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func register(ctx context.Context, db *DB, id, host string) error {
	ctx = withOp(ctx, OpReplica)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO replicas (id, host, pid, version, started_at, seen_at)
		VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp())
		ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
			started_at = EXCLUDED.started_at, seen_at = EXCLUDED.seen_at`, id, host, os.Getpid(), buildVersion())
	b.Queue(`DELETE FROM replicas WHERE seen_at < clock_timestamp() - $1::bigint * interval '1 microsecond'`,
		forgetReplicasAfter.Microseconds())
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgstore: register replica %s: %w", id, err)
	}
	return nil
}

// errNotRegistered is beat's error when the replica's row is gone.
var errNotRegistered = errors.New("not registered (its row was removed)")

func beat(ctx context.Context, db *DB, id string) error {
	ctx = withOp(ctx, OpReplica)
	tag, err := db.pool.Exec(ctx, `UPDATE replicas SET seen_at = clock_timestamp() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("pgstore: replica heartbeat %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: replica heartbeat %s: %w", id, errNotRegistered)
	}
	return nil
}

// close stops the heartbeat and deregisters the replica (its leases are
// released by their own loops).
func (r *replicaState) close(db *DB) {
	r.stop()
	<-r.done
	if !r.started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := db.pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, r.id); err != nil {
		db.log.Warn("replica deregistration failed", zap.String("replica_id", r.id), zap.Error(err))
	}
}

// buildVersion is the binary's module version and VCS revision.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// ReplicaID is this backend's replica id: the holder of its leases.
func (b *Backend) ReplicaID() string { return b.rep.id }

// RunLeader runs fn as the leader role name (e.g. "telegram:<account>")
// of this replica: see the function RunLeader. The lease's ttl is
// BackendOptions.LeaderTTL (DefaultLeaderTTL). A solo backend runs fn at
// once, without a lease: its daemon holds the exclusive daemon lock, so no
// other process can hold the role, and a daemon restarted after a SIGKILL
// must not wait out the lease its dead predecessor left (issue 21: ~9 s of
// silence after every crash).
func (b *Backend) RunLeader(ctx context.Context, name string, fn func(context.Context) error) error {
	if b.solo {
		if err := b.rep.leases.validate(name, b.rep.ttl); err != nil {
			return fmt.Errorf("pgstore: leader %q: %w", name, err)
		}
		err := fn(ctx)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return RunLeader(ctx, b.rep.leases, name, b.rep.ttl, fn)
}

// Replicas lists the registered replicas, most recently started first.
func (b *Backend) Replicas(ctx context.Context) ([]Replica, error) {
	ctx = withOp(ctx, OpReplica)
	rows, err := b.db.pool.Query(ctx, `SELECT id, host, pid, version, started_at, seen_at,
			(extract(epoch FROM clock_timestamp() - seen_at) * 1000000)::bigint
		FROM replicas ORDER BY started_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: replicas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
		var (
			r   Replica
			age int64
		)
		err := row.Scan(&r.ID, &r.Host, &r.PID, &r.Version, &r.StartedAt, &r.SeenAt, &age)
		r.StartedAt, r.SeenAt, r.Age = r.StartedAt.UTC(), r.SeenAt.UTC(), time.Duration(age)*time.Microsecond
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: replicas: %w", err)
	}
	return out, nil
}

// Leases lists the leases held now (unexpired), by name.
func (b *Backend) Leases(ctx context.Context) ([]Lease, error) {
	ctx = withOp(ctx, OpReplica)
	rows, err := b.db.pool.Query(ctx, `SELECT name, holder, token, acquired_at, expires_at,
			(extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint
		FROM leases WHERE expires_at > clock_timestamp() ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Lease, error) {
		var (
			l    Lease
			left int64
		)
		err := row.Scan(&l.Name, &l.Holder, &l.Token, &l.AcquiredAt, &l.ExpiresAt, &left)
		l.AcquiredAt, l.ExpiresAt = l.AcquiredAt.UTC(), l.ExpiresAt.UTC()
		l.remaining = time.Duration(left) * time.Microsecond
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: leases: %w", err)
	}
	return out, nil
}

// Remaining is, for a lease listed by Backend.Leases or read with Held,
// how long it had to run by the database's clock.
func (l Lease) Remaining() time.Duration { return l.remaining }
