package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Defaults for Options.
const (
	DefaultCacheTTL      = 45 * time.Second
	DefaultFlushInterval = time.Second
	// CacheTTLEnv overrides Options.CacheTTL, in milliseconds (0 disables the cache).
	CacheTTLEnv = "GATEWAY_SESSION_CACHE_TTL_MS"
	// maintenanceEvery is how often maintenance runs after the one at Open.
	maintenanceEvery = time.Hour
	// maintenanceAfterStart is how long after Open (and after the counter
	// repair passes ended) the first maintenance runs: it reads every
	// entry and the whole directory (two files a session), and the first
	// replies of a start (a backlog the journal replays) come first.
	maintenanceAfterStart = 30 * time.Second
)

// Options configures a Manager.
type Options struct {
	StateDir string
	// CacheTTL is how long reads trust the cached index: negative means the
	// default (45 s), 0 disables the cache. GATEWAY_SESSION_CACHE_TTL_MS wins.
	CacheTTL      time.Duration
	FlushInterval time.Duration // counters coalesced at most this long (default 1s)
	LockTimeout   time.Duration // default 10s
	MaxHold       time.Duration // default 5m
	Maintenance   sessions.Maintenance
	Reset         sessions.ResetConfig
	Logger        *zap.Logger
	Now           func() time.Time
	// Passive is for short-lived tools (the CLI) beside a running daemon:
	// no counter repair and no maintenance, which would write the index
	// from a second process and race the daemon's coalesced counters.
	Passive bool
	// JournalOpen opens the ingress journal for appending (nil: the file,
	// O_APPEND). Tests inject storage faults (ENOSPC, short writes) with it.
	JournalOpen func(path string) (JournalFile, error)
	// Observe, if set, is told how long each file lock took to acquire
	// (ObserveLockWait, the waiting for other holders included) and each
	// flush of a store's coalesced updates to its index (ObserveFlush).
	// It must not block (the daemon feeds histograms).
	Observe func(what string, d time.Duration)
	// maintainAfter replaces maintenanceAfterStart when not zero
	// (negative: no wait); tests that wait for the pass at Open set it.
	maintainAfter time.Duration
}

// What Options.Observe is told about.
const (
	ObserveLockWait = "lock_wait"
	ObserveFlush    = "flush"
)

// Manager owns every agent's store below StateDir and the ingress journal.
// It runs one background goroutine (flushing coalesced counters every
// FlushInterval and maintenance hourly) that Close stops.
type Manager struct {
	opts     Options
	log      *zap.Logger
	locks    *lockSet
	cacheTTL time.Duration
	reset    atomic.Pointer[sessions.ResetConfig]
	maint    atomic.Pointer[sessions.Maintenance]
	// started is closed once the maintenance pass after Open has run (or
	// was skipped: passive, or closing); tests wait for it before they
	// rely on nothing writing the index behind them.
	started chan struct{}

	mu     sync.Mutex        // guards stores, closed
	stores map[string]*Store // by agent id
	closed bool

	jmu     sync.Mutex // guards journal
	journal *Journal

	hmu     sync.Mutex // guards history
	history *RoomHistory

	smu     sync.Mutex // guards pairing, cursors, limits, msgs, usage, jobs (backend.go)
	pairing *Pairing
	cursors *Cursors
	limits  *Limits
	dead    *DeadLetters
	memory  *Memory
	msgs    *RoomMessages
	jobs    *Jobs
	usage   *UsageLog

	search *searchIndex // transcript search (search_index.go)

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{}
	// bg counts the background work goBackground started (the stores'
	// counter repair passes); Close waits for it.
	bg sync.WaitGroup
}

// Open opens (creating if needed) the state directory and starts the
// background flusher and maintenance.
func Open(opts Options) (*Manager, error) {
	if opts.StateDir == "" {
		return nil, fmt.Errorf("sessions: open: empty state dir")
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("sessions: open: %w", err)
	}
	opts.StateDir = abs
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	ttl := opts.CacheTTL
	if ttl < 0 {
		ttl = DefaultCacheTTL
	}
	if v, ok := os.LookupEnv(CacheTTLEnv); ok && v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("sessions: open: %s=%q: want milliseconds >= 0", CacheTTLEnv, v)
		}
		ttl = time.Duration(ms) * time.Millisecond
	}
	if err := opts.Reset.Validate(); err != nil {
		return nil, fmt.Errorf("sessions: open: %w", err)
	}
	mt := opts.Maintenance.WithDefaults()
	if err := mt.Validate(); err != nil {
		return nil, fmt.Errorf("sessions: open: %w", err)
	}
	if err := mkdirPrivate(filepath.Join(opts.StateDir, "agents")); err != nil {
		return nil, fmt.Errorf("sessions: open: %w", err)
	}
	m := &Manager{
		opts: opts, log: opts.Logger, cacheTTL: ttl,
		locks:  newLockSet(opts.LockTimeout, opts.MaxHold, opts.Logger, opts.Observe),
		stores: map[string]*Store{}, done: make(chan struct{}), started: make(chan struct{}),
	}
	m.search = newSearchIndex(m)
	rc := opts.Reset
	m.reset.Store(&rc)
	m.maint.Store(&mt)
	ctx, cancel := context.WithCancel(context.Background())
	m.ctx, m.cancel = ctx, cancel
	go m.run(ctx)
	return m, nil
}

func (m *Manager) now() time.Time { return m.opts.Now() }

// StateDir is the absolute state directory.
func (m *Manager) StateDir() string { return m.opts.StateDir }

// SetReset swaps the reset policy; the next evaluation uses it (hot reload).
// An invalid policy is ignored with a logged error.
func (m *Manager) SetReset(c sessions.ResetConfig) {
	if err := c.Validate(); err != nil {
		m.log.Error("reset policy rejected", zap.Error(err))
		return
	}
	m.reset.Store(&c)
}

// ResetConfig is the reset policy in force.
func (m *Manager) ResetConfig() sessions.ResetConfig { return *m.reset.Load() }

func (m *Manager) resetConfig() sessions.ResetConfig { return *m.reset.Load() }

// SetMaintenance swaps the maintenance settings (hot reload).
func (m *Manager) SetMaintenance(c sessions.Maintenance) error {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("sessions: maintenance: %w", err)
	}
	m.maint.Store(&c)
	return nil
}

// Store returns the store of one agent (created on first use). agentID must
// be a valid id (routing.ValidID); it becomes a directory name.
func (m *Manager) Store(agentID string) (*Store, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("sessions: store %q: manager closed", sessions.Clip(agentID))
	}
	if s, ok := m.stores[agentID]; ok {
		return s, nil
	}
	s, err := newStore(m, agentID)
	if err != nil {
		return nil, err
	}
	m.stores[agentID] = s
	return s, nil
}

// Agents returns the ids of agents that have a store on disk, sorted.
func (m *Manager) Agents() ([]string, error) {
	des, err := os.ReadDir(filepath.Join(m.opts.StateDir, "agents"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("sessions: agents: %w", err)
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() || !routing.ValidID(de.Name()) {
			continue
		}
		if fileExists(filepath.Join(m.opts.StateDir, "agents", de.Name(), "sessions", indexName)) {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *Manager) openStores() []*Store {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Store, 0, len(m.stores))
	for _, s := range m.stores {
		out = append(out, s)
	}
	return out
}

// Flush writes every store's coalesced updates now.
func (m *Manager) Flush(ctx context.Context) error {
	var errs []error
	for _, s := range m.openStores() {
		if err := s.Flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Flush writes the store's coalesced updates now.
func (s *Store) Flush(ctx context.Context) error {
	if !s.hasPending() {
		return nil
	}
	start := time.Now()
	if err := s.commit(ctx, nil); err != nil {
		return fmt.Errorf("sessions: flush %s: %w", s.agentID, err)
	}
	if s.m.opts.Observe != nil {
		s.m.opts.Observe(ObserveFlush, time.Since(start))
	}
	return nil
}

// run is the Manager's background goroutine: the flushes and the hourly
// maintenance (the first, after the start, runs in its own goroutine:
// startMaintenance).
func (m *Manager) run(ctx context.Context) {
	defer close(m.done)
	flush := time.NewTicker(m.opts.FlushInterval)
	defer flush.Stop()
	maint := time.NewTimer(maintenanceEvery)
	defer maint.Stop()
	if m.opts.Passive {
		maint.Stop()
		close(m.started)
	} else {
		m.startMaintenance()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if err := m.Flush(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("flushing sessions failed", zap.Error(err))
			}
		case <-maint.C:
			m.maintain(ctx)
			maint.Reset(maintenanceEvery)
		}
	}
}

// startMaintenance starts the counter repair of every store on disk and,
// once its passes ended and then a while more, the first maintenance: at
// Open it would compete with them and with the first replies for the CPU
// (and the stores' lock), and it can wait. It closes m.started when that
// maintenance ran, or Close stopped it.
func (m *Manager) startMaintenance() {
	if !m.goBackground(func(ctx context.Context) {
		defer close(m.started)
		if m.repairAll(ctx) && m.sleep(ctx, m.maintainAfter()) {
			m.maintain(ctx)
		}
	}) {
		close(m.started)
	}
}

// maintain runs maintenance, logging its failure.
func (m *Manager) maintain(ctx context.Context) {
	if _, err := m.Maintain(ctx); err != nil && ctx.Err() == nil {
		m.log.Error("session maintenance failed", zap.Error(err))
	}
}

// maintainAfter is how long after the start the first maintenance waits.
func (m *Manager) maintainAfter() time.Duration {
	switch d := m.opts.maintainAfter; {
	case d < 0:
		return 0
	case d > 0:
		return d
	}
	return maintenanceAfterStart
}

// sleep waits d; false when ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// goBackground runs fn in a goroutine that Close cancels (fn's ctx) and
// waits for; false when the Manager is closing.
func (m *Manager) goBackground(fn func(ctx context.Context)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		fn(m.ctx)
	}()
	return true
}

// repairAll starts the counter repair of every store on disk and waits
// for its passes to end; false when ctx ended first (Close).
func (m *Manager) repairAll(ctx context.Context) bool {
	agents, err := m.Agents()
	if err != nil {
		return ctx.Err() == nil
	}
	var stores []*Store
	for _, a := range agents {
		if s, err := m.Store(a); err == nil {
			s.ensureRepaired()
			stores = append(stores, s)
		}
	}
	for _, s := range stores {
		if s.repair.ended == nil {
			continue // passive: no repair
		}
		select {
		case <-s.repair.ended:
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// Close stops the background goroutine, flushes coalesced counters and
// closes the journal and the transcripts' open files. Stores must not be used afterwards.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	<-m.done
	m.bg.Wait()
	err := m.search.close()
	ferr := m.Flush(context.Background())
	err = errors.Join(err, ferr)
	if !m.opts.Passive {
		m.mu.Lock()
		stores := make([]*Store, 0, len(m.stores))
		for _, st := range m.stores {
			stores = append(stores, st)
		}
		m.mu.Unlock()
		flushed := ferr == nil
		for _, st := range stores {
			ferr := st.fold()
			if ferr == nil && flushed {
				ferr = st.markClean()
			}
			err = errors.Join(err, ferr)
		}
	}
	m.mu.Lock()
	for _, st := range m.stores {
		st.tcache.closeAll()
	}
	m.mu.Unlock()
	m.jmu.Lock()
	if m.journal != nil {
		err = errors.Join(err, m.journal.close())
	}
	m.jmu.Unlock()
	m.hmu.Lock()
	if m.history != nil {
		err = errors.Join(err, m.history.Close())
	}
	m.hmu.Unlock()
	m.smu.Lock()
	if m.usage != nil {
		err = errors.Join(err, m.usage.Close())
	}
	m.smu.Unlock()
	m.locks.close()
	return err
}
