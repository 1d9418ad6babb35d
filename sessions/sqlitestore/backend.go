package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
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
	// no maintenance loop.
	Passive bool
}

// Backend is the SQLite implementation of sessions.Backend: every
// agent's index and transcripts, the ingress journal and outbox, room
// history, pairing, cursors, limits, dead letters, usage, search, memory
// and jobs in one database file. Adding a part to the seam means a table
// (a new migration), a file with its type beside the others, and one
// method here.
type Backend struct {
	db    *DB
	log   *zap.Logger
	reset atomic.Pointer[sessions.ResetConfig]
	maint atomic.Pointer[sessions.Maintenance]

	delivery *Delivery
	rooms    *RoomLog

	passive bool
	stop    context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex // guards stores
	stores map[string]*Store
}

var _ sessions.Backend = (*Backend)(nil)

// maintenanceEvery is how often the backend applies session maintenance
// (the files backend's interval).
const maintenanceEvery = time.Hour

// PathIn is the database file of state directory dir.
func PathIn(dir string) string { return filepath.Join(dir, FileName) }

// OpenBackend opens the database (creating and migrating it) and returns
// it as a sessions.Backend.
func OpenBackend(ctx context.Context, o BackendOptions) (*Backend, error) {
	db, err := Open(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	return NewBackend(db, o), nil
}

// NewBackend returns db as a sessions.Backend; closing the backend closes
// db. Unless o.Passive it applies session maintenance at once and hourly,
// in one goroutine that Close stops and waits for.
func NewBackend(db *DB, o BackendOptions) *Backend {
	b := &Backend{db: db, log: db.log, stores: map[string]*Store{}, done: make(chan struct{}), passive: o.Passive}
	b.reset.Store(&o.Reset)
	b.maint.Store(&o.Maintenance)
	b.delivery = db.Delivery()
	b.rooms = db.RoomLog()
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	if o.Passive {
		close(b.done)
	} else {
		go b.maintain(ctx)
	}
	return b
}

// maintain applies the maintenance policy to every agent and forgets the
// journal's completed ids past their retention, at start and then every
// maintenanceEvery, until ctx ends. (The journal also prunes after every
// 1000 completions; a daemon restarted before that never would.)
func (b *Backend) maintain(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(maintenanceEvery)
	defer t.Stop()
	for {
		if err := b.delivery.prune(); err != nil {
			b.log.Warn("journal pruning failed", zap.Error(err))
		}
		_, _ = b.MaintainAll(ctx)
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
		return b.db.Store(a, b.ResetConfig).Maintain(ctx, cfg)
	})
	if ctx.Err() != nil {
		return reps, err
	}
	return reps, errors.Join(err, b.maintainJobs(ctx, cfg))
}

// DB is the database behind b.
func (b *Backend) DB() *DB { return b.db }

// Kind is "sqlite".
func (b *Backend) Kind() string { return "sqlite" }

// Store returns agentID's sessions; the same value for the same agent.
func (b *Backend) Store(agentID string) (sessions.AgentStore, error) {
	if agentID == "" {
		return nil, errors.New("sqlitestore: store: empty agent id")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.stores[agentID]
	if !ok {
		st = b.db.Store(agentID, b.ResetConfig)
		b.stores[agentID] = st
	}
	return st, nil
}

// Agents lists the agents with stored sessions (current or archived),
// sorted.
func (b *Backend) Agents() ([]string, error) {
	ctx, cancel := call()
	defer cancel()
	var ids []string
	err := b.db.query(ctx, func(r *sql.Rows) error {
		var id string
		err := r.Scan(&id)
		ids = append(ids, id)
		return err
	}, `SELECT agent_id FROM entries UNION SELECT agent_id FROM archived ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: agents: %w", err)
	}
	return ids, nil
}

// Journal is the ingress journal, outbox and drafts.
func (b *Backend) Journal() sessions.Delivery { return b.delivery }

// History is the room history.
func (b *Backend) History() sessions.RoomLog { return b.rooms }

// Pairing is the pairing state.
func (b *Backend) Pairing() sessions.PairingState { return b.db.Pairing() }

// Cursors holds the channel cursors.
func (b *Backend) Cursors() sessions.Cursors { return b.db.Cursors() }

// Limits holds the budget counters.
func (b *Backend) Limits() sessions.LimitCounters { return b.db.Limits() }

// DeadLetters keeps the messages and replies given up.
func (b *Backend) DeadLetters() sessions.DeadLetters { return b.db.DeadLetters() }

// Messages is the message tool's record of the rooms' messages.
func (b *Backend) Messages() sessions.RoomMessages { return b.db.RoomMessages() }

// Usage is the usage ledger.
func (b *Backend) Usage() sessions.UsageLog { return b.db.Usage() }

// Search finds messages in the transcripts.
func (b *Backend) Search() sessions.Searcher { return b.db.Search() }

// Memory holds the agents' notes.
func (b *Backend) Memory() sessions.Memory { return b.db.Memory() }

// Jobs holds the scheduled jobs.
func (b *Backend) Jobs() sessions.Jobs { return b.db.Jobs() }

// SetReset applies a reloaded reset configuration.
func (b *Backend) SetReset(c sessions.ResetConfig) { b.reset.Store(&c) }

// ResetConfig is the reset configuration in force.
func (b *Backend) ResetConfig() sessions.ResetConfig { return *b.reset.Load() }

// SetMaintenance changes the maintenance policy the next pass applies.
func (b *Backend) SetMaintenance(c sessions.Maintenance) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b.maint.Store(&c)
	return nil
}

// Flush writes the counters the stores hold back after a storage
// failure; every other write is durable when it returns.
func (b *Backend) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	stores := make([]*Store, 0, len(b.stores))
	for _, st := range b.stores {
		stores = append(stores, st)
	}
	b.mu.Unlock()
	var errs []error
	for _, st := range stores {
		errs = append(errs, st.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Status reads the schema version through a reading connection.
func (b *Backend) Status(ctx context.Context) sessions.BackendStatus {
	start := time.Now()
	st := sessions.BackendStatus{Kind: "sqlite", Location: b.db.Path()}
	v, err := schemaVersion(ctx, b.db.read.DB)
	if err != nil {
		st.Err = err.Error()
	} else if err := b.db.w.health(); err != nil {
		st.Err = err.Error()
	}
	st.SchemaVersion = v
	st.Latency = time.Since(start)
	return st
}

// Close stops maintenance, writes the journal marks and counters held
// back by a storage failure (if it can), commits the writes queued and
// closes the database.
func (b *Backend) Close() error {
	b.stop()
	<-b.done
	held := errors.Join(b.delivery.flushHeld(), b.Flush(context.Background()))
	err := errors.Join(held, b.db.Close())
	b.delivery.wait() // the closed writer ends the recovery loop
	if err != nil {
		return fmt.Errorf("sqlitestore: close: %w", err)
	}
	return nil
}
