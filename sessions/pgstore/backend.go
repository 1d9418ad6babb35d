package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// BackendOptions configure OpenBackend.
type BackendOptions struct {
	Options
	// Reset is the reset policy in force at start (SetReset changes it).
	Reset sessions.ResetConfig
	// Maintenance is the pruning policy (SetMaintenance changes it).
	Maintenance sessions.Maintenance
	// Passive is for short-lived tools (the CLI) beside a running daemon:
	// no maintenance loop, no replica registration.
	Passive bool
	// ReplicaID names this replica (the holder of its leases); empty is a
	// new UUID. LeaderTTL is its leader roles' lease (DefaultLeaderTTL
	// when 0). KeepLeasesOnStop leaves leases to expire at stop, as a
	// crash does (failover tests). See replica.go.
	ReplicaID        string
	LeaderTTL        time.Duration
	KeepLeasesOnStop bool
	// Solo says this backend's daemon is the only one on the database (it
	// holds the exclusive daemon lock: storage.postgres.replicas false):
	// its turns need no session leases (DeliveryOptions.Solo).
	Solo bool
}

// Backend is the PostgreSQL implementation of sessions.Backend: every
// agent's index and transcripts, the ingress journal and outbox, room
// history, pairing and cursors in one database.
type Backend struct {
	db    *DB
	log   *zap.Logger
	reset atomic.Pointer[sessions.ResetConfig]

	delivery *Delivery
	rooms    *RoomLog
	pairing  sessions.PairingState
	cursors  sessions.Cursors

	rep *replicaState // this replica's id and heartbeat (replica.go)
	// solo: this daemon is alone on the database (BackendOptions.Solo).
	solo bool
	// passive: a tool beside the daemon (BackendOptions.Passive): it
	// neither maintains nor caps.
	passive bool

	maint atomic.Pointer[sessions.Maintenance]
	stop  context.CancelFunc
	done  chan struct{}

	mu     sync.Mutex // guards stores
	stores map[string]*Store
}

// maintenanceEvery is how often the backend applies session maintenance
// (the files backend's interval).
const maintenanceEvery = time.Hour

var _ sessions.Backend = (*Backend)(nil)

// OpenBackend opens the database (connecting, migrating under a lock) and
// returns it as a sessions.Backend. An unreachable server is an error that
// names it.
func OpenBackend(ctx context.Context, o BackendOptions) (*Backend, error) {
	db, err := Open(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	return NewBackend(db, o), nil
}

// NewBackend returns db as a sessions.Backend (o.Options is not used: db
// is open); closing the backend closes db. Unless o.Passive it applies
// session maintenance at once and hourly.
func NewBackend(db *DB, o BackendOptions) *Backend {
	b := &Backend{db: db, log: db.log, stores: map[string]*Store{}, done: make(chan struct{})}
	b.reset.Store(&o.Reset)
	b.maint.Store(&o.Maintenance)
	b.rep = newReplica(db, o)
	b.solo = o.Solo
	b.passive = o.Passive
	b.delivery = db.Delivery(DeliveryOptions{Holder: b.rep.id, Solo: o.Solo})
	b.rooms = db.RoomLog(RoomLogOptions{})
	b.pairing = db.Pairing()
	b.cursors = db.Cursors()
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	if o.Passive {
		close(b.done)
	} else {
		go b.maintain(ctx)
	}
	return b
}

// maintain applies the maintenance policy to every agent at start and then
// every maintenanceEvery, until ctx ends.
func (b *Backend) maintain(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(maintenanceEvery)
	defer t.Stop()
	for {
		b.MaintainAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// MaintainAll applies the maintenance policy in force to every agent with
// stored sessions, then to the ended jobs; failures are logged and
// reported.
func (b *Backend) MaintainAll(ctx context.Context) ([]sessions.MaintenanceReport, error) {
	agents, err := b.Agents()
	if err != nil {
		b.log.Warn("session maintenance: list agents", zap.Error(err))
		return nil, err
	}
	cfg := *b.maint.Load()
	reps, err := sessions.MaintainAgents(ctx, b.log, agents, func(ctx context.Context, a string) (sessions.MaintenanceReport, error) {
		return b.db.Index(a, b.ResetConfig).Maintain(ctx, cfg)
	})
	if ctx.Err() != nil {
		return reps, err
	}
	return reps, errors.Join(err, b.maintainJobs(ctx, cfg))
}

// DB is the database behind b.
func (b *Backend) DB() *DB { return b.db }

// OpStats is the database's round trips and commits by operation
// (DB.OpStats), for the daemon's metrics.
func (b *Backend) OpStats() []OpStats { return b.db.OpStats() }

func (b *Backend) Kind() string { return "postgres" }

// Store returns agentID's sessions; the same value for the same agent.
func (b *Backend) Store(agentID string) (sessions.AgentStore, error) {
	if agentID == "" {
		return nil, errors.New("pgstore: store: empty agent id")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.stores[agentID]
	if !ok {
		st = b.db.Store(agentID, b.ResetConfig)
		if !b.passive {
			st.x.maint, st.x.capWarnAt = b.maintenance, new(atomic.Int64)
		}
		b.stores[agentID] = st
	}
	return st, nil
}

// Agents lists the agents with stored sessions, sorted.
func (b *Backend) Agents() ([]string, error) {
	ctx, cancel := call()
	defer cancel()
	rows, err := b.db.pool.Query(ctx, `SELECT agent_id FROM entries GROUP BY agent_id
		UNION SELECT agent_id FROM archived GROUP BY agent_id ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: agents: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: agents: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: agents: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

func (b *Backend) Journal() sessions.Delivery        { return b.delivery }
func (b *Backend) History() sessions.RoomLog         { return b.rooms }
func (b *Backend) Pairing() sessions.PairingState    { return b.pairing }
func (b *Backend) Cursors() sessions.Cursors         { return b.cursors }
func (b *Backend) Limits() sessions.LimitCounters    { return b.db.Limits() }
func (b *Backend) DeadLetters() sessions.DeadLetters { return b.db.DeadLetters() }
func (b *Backend) Usage() sessions.UsageLog          { return b.db.Usage() }
func (b *Backend) Search() sessions.Searcher         { return b.db.Search() }
func (b *Backend) Jobs() sessions.Jobs               { return b.db.Jobs() }
func (b *Backend) SetReset(c sessions.ResetConfig)   { b.reset.Store(&c) }

// Messages is the message tool's record of the rooms' messages.
func (b *Backend) Messages() sessions.RoomMessages { return b.db.RoomMessages() }

func (b *Backend) ResetConfig() sessions.ResetConfig {
	return *b.reset.Load()
}

// maintenance is the policy in force, defaults filled.
func (b *Backend) maintenance() sessions.Maintenance { return b.maint.Load().WithDefaults() }

// SetMaintenance changes the maintenance policy the next pass applies.
func (b *Backend) SetMaintenance(c sessions.Maintenance) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b.maint.Store(&c)
	return nil
}

// Flush writes the counters queued and waits for the WAL flush past them
// (and past every lazy commit before it).
func (b *Backend) Flush(ctx context.Context) error {
	if err := b.db.counters.wait(ctx, "", ""); err != nil {
		return err
	}
	if err := b.db.flushWAL(ctx); err != nil {
		return fmt.Errorf("pgstore: flush: %w", err)
	}
	return nil
}

// Status pings the server and reads the schema version.
func (b *Backend) Status(ctx context.Context) sessions.BackendStatus {
	start := time.Now()
	st := sessions.BackendStatus{Kind: "postgres", Location: b.db.Target()}
	v, err := b.db.SchemaVersion(ctx)
	if err != nil {
		st.Err = err.Error()
	}
	st.SchemaVersion = v
	st.Latency = time.Since(start)
	return st
}

// Close stops maintenance, writes the delivery marks still waiting and
// releases the pool; the error says what could not be written.
func (b *Backend) Close() error {
	b.stop()
	<-b.done
	b.rep.close(b.db)
	err := b.delivery.Close()
	b.db.Close()
	if err != nil {
		return fmt.Errorf("pgstore: close: %w", err)
	}
	return nil
}
