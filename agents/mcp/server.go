package mcp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// State is a server's connection state.
type State string

// States of a server.
const (
	StateStarting   State = "starting"   // first connection attempt under way
	StateReady      State = "ready"      // connected, tools listed
	StateRestarting State = "restarting" // down, waiting for the next attempt (backoff)
	StateDisabled   State = "disabled"   // enabled: false
	StateStopped    State = "stopped"    // the manager stopped it
)

// server is one configured server and its supervisor's shared state.
type server struct {
	name    string
	log     *zap.Logger
	version string
	maxMsg  int // Options.MaxMessageBytes
	groups  *groupRegistry
	http    *http.Client
	backoff func(failures int) time.Duration
	// resetAfter is how long a connection must last for the backoff to
	// start over.
	resetAfter time.Duration
	now        func() time.Time
	refresh    chan struct{} // list_changed seen; capacity 1

	// settled is closed once the first connection attempt ended (either
	// way), so a turn can wait for a server that is just starting.
	settled    chan struct{}
	settleOnce sync.Once
	started    bool               // guarded by the Manager's mu
	cancel     context.CancelFunc // guarded by the Manager's mu; stops the supervisor
	done       chan struct{}      // closed when the supervisor returned
	mu         sync.Mutex         // guards the fields below
	cfg        ServerConfig
	state      State
	session    *sdk.ClientSession // nil unless ready
	changed    chan struct{}      // closed and replaced on every change of state
	gone       chan struct{}      // closed when session goes; replaced when one is set
	raw        []*sdk.Tool        // the server's last tool list, unfiltered
	tools      []Tool             // raw filtered and named
	// instructions is what the server's initialize result asked of the
	// model (the last connection's), cut to MaxInstructions.
	instructions string
	lastErr      error
	restarts     int
	nextAttempt  time.Time
	since        time.Time
}

func newServer(name string, cfg ServerConfig, m *Manager) *server {
	s := &server{name: name, cfg: cfg, log: m.log.With(zap.String("mcp_server", name)), version: m.opts.Version, maxMsg: m.opts.MaxMessageBytes, groups: m.groups,
		http: m.opts.HTTPClient, backoff: m.backoff, resetAfter: m.maxBackoff, now: m.now, refresh: make(chan struct{}, 1),
		settled: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{}), gone: make(chan struct{}), state: StateStarting, since: m.now()}
	if !cfg.IsEnabled() {
		s.state = StateDisabled
		s.settle()
	}
	return s
}

func (s *server) settle() { s.settleOnce.Do(func() { close(s.settled) }) }

// supervise connects, serves and reconnects with backoff until ctx ends.
func (s *server) supervise(ctx context.Context) {
	defer close(s.done)
	defer s.settle()
	failures := 0
	for {
		d := &dialer{name: s.name, cfg: s.config(), version: s.version, maxMsg: s.maxMsg, http: s.http, log: s.log, groups: s.groups,
			onToolsChanged: func() {
				select {
				case s.refresh <- struct{}{}:
				default:
				}
			}}
		began := s.now()
		cs, err := s.open(ctx, d)
		if ctx.Err() != nil {
			if cs != nil {
				_ = cs.Close()
			}
			d.reap()
			s.setDown(StateStopped, nil, 0)
			return
		}
		if err != nil {
			d.reap()
		} else {
			s.log.Info("mcp server connected", zap.String("transport", d.cfg.Transport()), zap.Int("tools", len(s.toolList())))
			err = s.serve(ctx, cs, d)
			d.reap() // the session is closed: what the server left behind goes too
			if ctx.Err() != nil {
				s.setDown(StateStopped, nil, 0)
				return
			}
			if s.now().Sub(began) >= s.resetAfter {
				failures = 0 // it ran a good while: start the backoff over
			}
		}
		failures++
		err = d.cfg.redact(err)
		delay := s.backoff(failures)
		s.log.Warn("mcp server down; restarting after a pause", zap.Error(err), zap.Duration("backoff", delay), zap.Int("failures", failures))
		s.setDown(StateRestarting, err, delay)
		s.settle()
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.setDown(StateStopped, nil, 0)
			return
		case <-t.C:
		}
	}
}

// open connects and lists the tools within the connect timeout.
func (s *server) open(ctx context.Context, d *dialer) (*sdk.ClientSession, error) {
	cctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout())
	defer cancel()
	cs, err := d.connect(cctx)
	if err != nil {
		return nil, err
	}
	select { // a notification before the first list is covered by it
	case <-s.refresh:
	default:
	}
	raw, err := listTools(cctx, cs, s.log)
	if err != nil {
		_ = cs.Close()
		return nil, err
	}
	d.ready()
	instr := ""
	if ir := cs.InitializeResult(); ir != nil {
		instr = cutInstructions(ir.Instructions)
	}
	s.mu.Lock()
	s.session, s.raw, s.tools = cs, raw, offered(s.name, s.cfg, raw, s.log)
	s.instructions = instr
	s.state, s.lastErr, s.since = StateReady, nil, s.now()
	s.gone = make(chan struct{})
	s.changedLocked()
	s.mu.Unlock()
	s.settle()
	return cs, nil
}

// serve waits for the session to end (the server exited or the HTTP
// session was lost) and lists the tools again on list_changed. It returns
// why the session ended, or nil when ctx ended (the session closed).
func (s *server) serve(ctx context.Context, cs *sdk.ClientSession, d *dialer) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			_ = cs.Close()
			<-ended
			return nil
		case err := <-ended:
			_ = cs.Close() // reaps a stdio process
			if err == nil {
				err = fmt.Errorf("connection closed")
			}
			return fmt.Errorf("session ended: %w%s", err, d.stderrTail())
		case <-s.refresh:
			lctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout())
			raw, err := listTools(lctx, cs, s.log)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("mcp tool list refresh failed; keeping the previous list", zap.Error(d.cfg.redact(err)))
				}
				continue
			}
			s.mu.Lock()
			s.raw, s.tools = raw, offered(s.name, s.cfg, raw, s.log)
			n := len(s.tools)
			s.mu.Unlock()
			s.log.Info("mcp tool list changed", zap.Int("tools", n))
		}
	}
}

// setDown records that the session is gone.
func (s *server) setDown(st State, err error, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		s.session = nil
		close(s.gone)
	}
	if st == StateRestarting {
		s.restarts++
	}
	s.state, s.lastErr, s.since = st, err, s.now()
	s.nextAttempt = s.now().Add(delay)
	s.changedLocked()
}

// changedLocked wakes the calls waiting for a session (waitSession).
func (s *server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *server) config() ServerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

func (s *server) instructionText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.instructions
}

func (s *server) toolList() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// reconfigure applies a changed tool filter or timeout without reconnecting.
func (s *server) reconfigure(cfg ServerConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.tools = offered(s.name, cfg, s.raw, s.log)
}
