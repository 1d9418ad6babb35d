package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Defaults of the restart backoff.
const (
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = time.Minute
)

// Options configures a Manager.
type Options struct {
	Logger *zap.Logger
	// HTTPClient reaches Streamable HTTP servers (nil: a client of its
	// own; the configured headers are added to every request).
	HTTPClient *http.Client
	// Version is the client version announced to servers (default "dev").
	Version string
	// Backoff is the first restart delay, doubled per failure up to
	// MaxBackoff (defaults 1 s and 1 min); a connection that lasted
	// MaxBackoff starts it over.
	Backoff, MaxBackoff time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxMessageBytes caps one message from a server (default
	// DefaultMaxMessageBytes); see DefaultMaxMessageBytes.
	MaxMessageBytes int
	// GroupsDir is where the process groups of the stdio servers this
	// process starts are recorded, one file per process, and where Run
	// finds those of a daemon that died without stopping them (SIGKILL),
	// to stop them before it starts its own; empty: none recorded.
	GroupsDir string
}

// Manager keeps the configured servers connected and serves their tools.
// Apply sets the servers (at start and on every config reload); Run starts
// their supervisors and stops them all when its context ends.
type Manager struct {
	opts       Options
	log        *zap.Logger
	now        func() time.Time
	maxBackoff time.Duration
	changed    chan struct{} // Apply wakes Run; capacity 1
	metrics    metrics
	groups     *groupRegistry // nil: not recorded (Options.GroupsDir empty)
	reapOnce   sync.Once

	mu      sync.Mutex         // guards servers and names
	servers map[string]*server // by name
	names   []string           // sorted
}

// New returns a Manager with no servers.
func New(opts Options) *Manager {
	m := &Manager{opts: opts, log: opts.Logger, now: opts.Now, changed: make(chan struct{}, 1), servers: map[string]*server{}}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.opts.MaxMessageBytes <= 0 {
		m.opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if m.opts.Version == "" {
		m.opts.Version = "dev"
	}
	if m.opts.Backoff <= 0 {
		m.opts.Backoff = DefaultBackoff
	}
	if m.maxBackoff = m.opts.MaxBackoff; m.maxBackoff <= 0 {
		m.maxBackoff = DefaultMaxBackoff
	}
	m.metrics = newMetrics()
	if opts.GroupsDir != "" {
		m.groups = newGroupRegistry(opts.GroupsDir, m.log)
	}
	return m
}

// Register adds gateway_mcp_tool_calls_total, gateway_mcp_server_up and
// gateway_mcp_server_restarts to reg.
func (m *Manager) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.metrics.calls, statusCollector{m}} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("mcp: register metrics: %w", err)
		}
	}
	return nil
}

// backoff is the delay before attempt failures+1.
func (m *Manager) backoff(failures int) time.Duration {
	d := m.opts.Backoff
	for i := 1; i < failures && d < m.maxBackoff; i++ {
		d *= 2
	}
	return min(d, m.maxBackoff)
}

// Apply makes cfg the set of servers: added ones start, removed ones stop,
// changed ones restart with the new settings — except a change of only the
// tool filter or the call timeout, which applies without reconnecting.
// cfg must have passed Validate.
func (m *Manager) Apply(cfg Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, s := range m.servers {
		next, ok := cfg.Servers[name]
		old := s.config()
		switch {
		case ok && sameConnection(old, next):
			if !reflect.DeepEqual(old, next) {
				s.reconfigure(next)
				m.log.Info("mcp server settings changed", zap.String("mcp_server", name))
			}
			continue
		case ok:
			m.log.Info("mcp server changed; reconnecting", zap.String("mcp_server", name))
		default:
			m.log.Info("mcp server removed", zap.String("mcp_server", name))
		}
		if s.cancel != nil {
			s.cancel()
		}
		delete(m.servers, name)
	}
	for name, c := range cfg.Servers {
		if _, ok := m.servers[name]; !ok {
			m.servers[name] = newServer(name, c, m)
		}
	}
	m.names = m.names[:0]
	for name := range m.servers {
		m.names = append(m.names, name)
	}
	slices.Sort(m.names)
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// sameConnection reports whether a and b differ at most in what applies
// without reconnecting (tools filter, call timeout).
func sameConnection(a, b ServerConfig) bool {
	a.Tools, b.Tools = Filter{}, Filter{}
	a.Timeout, b.Timeout = 0, 0
	return reflect.DeepEqual(a, b)
}

// Run supervises the servers Apply set (and sets later) until ctx ends,
// then closes every session (stdio servers get their stdin closed, then
// SIGTERM, then SIGKILL; then whatever is left of the process group each
// was started in — processes it started — gets SIGTERM, then SIGKILL) and
// returns nil once all supervisors returned.
func (m *Manager) Run(ctx context.Context) error {
	m.reapOnce.Do(func() { m.groups.reapLeft() }) // before any server of ours starts
	var wg sync.WaitGroup
	for {
		m.mu.Lock()
		for _, s := range m.servers {
			if s.started || !s.config().IsEnabled() {
				continue
			}
			sctx, cancel := context.WithCancel(ctx)
			s.started, s.cancel = true, cancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				s.supervise(sctx)
			}()
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-m.changed:
		}
	}
}

// snapshot returns the servers in name order.
func (m *Manager) snapshot() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.names))
	for _, n := range m.names {
		out = append(out, m.servers[n])
	}
	return out
}

func (m *Manager) server(name string) (*server, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[name]
	return s, ok
}

// Tools returns the tools of the servers want admits (nil: all), in server
// then server-side order. A server still making its first connection is
// waited for (until ctx ends); one that is down offers the tools it last
// listed, so a call can wait for its restart.
func (m *Manager) Tools(ctx context.Context, want func(server string) bool) []Tool {
	var out []Tool
	for _, s := range m.snapshot() {
		if want != nil && !want(s.name) {
			continue
		}
		select {
		case <-s.settled:
		case <-ctx.Done():
			return out
		}
		out = append(out, s.toolList()...)
	}
	return out
}

// Instructions returns the instructions the server named server gave in
// its initialize result (the "instructions" field: how a model should use
// its tools), as of its last connection, cut to MaxInstructions; "" when
// it gave none or is not configured.
func (m *Manager) Instructions(server string) string {
	s, ok := m.server(server)
	if !ok {
		return ""
	}
	return s.instructionText()
}

// Call calls a server's tool by its offered name with JSON arguments (an
// object; empty means {}), within the server's timeout. A result the
// server marks isError is a Result with IsError, not an error; errors are
// the call's failure (unknown tool, timeout, server down or gone during the
// call, protocol error) with a message fit for the model, or ctx's error
// when ctx ended.
func (m *Manager) Call(ctx context.Context, name string, args []byte) (Result, error) {
	res, err := m.call(ctx, name, args)
	if server, ok := SplitToolName(name); ok && ctx.Err() == nil {
		m.metrics.count(server, res, err)
	}
	return res, err
}

func (m *Manager) call(ctx context.Context, name string, args []byte) (Result, error) {
	serverName, ok := SplitToolName(name)
	if !ok {
		return Result{}, fmt.Errorf("%q is not an MCP tool name", name)
	}
	s, ok := m.server(serverName)
	if !ok {
		return Result{}, fmt.Errorf("MCP server %q is not configured", serverName)
	}
	timeout := s.config().CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if len(args) == 0 {
		args = []byte(`{}`)
	}
	tool, err := m.findTool(ctx, cctx, s, timeout, name)
	if err != nil {
		return Result{}, err
	}
	var dead *sdk.ClientSession
	for {
		cs, err := s.waitSession(cctx, timeout, dead)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			if next, ok := m.server(serverName); ok && next != s {
				// A reload replaced the server (its settings changed)
				// before the call was sent: send it to the new one,
				// within the same timeout, if it offers the tool.
				s, dead = next, nil
				if tool, err = m.findTool(ctx, cctx, s, timeout, name); err != nil {
					return Result{}, err
				}
				continue
			}
			s.log.Warn("mcp tool call: the server is not connected", zap.Error(err))
			return Result{}, fmt.Errorf("MCP server %s is not connected: %w", s.name, err)
		}
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool.Remote, Arguments: json.RawMessage(args)})
		switch {
		case err == nil:
			return convert(res), nil
		case (errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)) && cctx.Err() == nil:
			// The session was already closing: the request was not sent;
			// or the server no longer knows the session (it restarted,
			// and answered 404): it did not run the call. Wait for the
			// next session (or the server a reload put in its place) and
			// send it there.
			dead = cs
			continue
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || s.sessionGone(cs):
			err = fmt.Errorf("%w (it is being restarted): %w", errConnectionLost, err)
		}
		return Result{}, m.callError(ctx, cctx, s, timeout, err)
	}
}

// findTool waits until s has made its first connection (a server that
// just started has no tool list yet) and returns its tool called name.
func (m *Manager) findTool(ctx, cctx context.Context, s *server, timeout time.Duration, name string) (*Tool, error) {
	select {
	case <-s.settled:
	case <-cctx.Done():
		return nil, m.callError(ctx, cctx, s, timeout, errors.New("the server did not start"))
	}
	for _, t := range s.toolList() {
		if t.Name == name {
			return &t, nil
		}
	}
	return nil, fmt.Errorf("MCP server %s offers no tool %q", s.name, name)
}

// callError words a failed call for the model.
func (m *Manager) callError(ctx, cctx context.Context, s *server, timeout time.Duration, err error) error {
	err = s.config().redact(err)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		s.log.Warn("mcp tool call timed out", zap.Duration("timeout", timeout))
		return fmt.Errorf("MCP server %s: the call timed out after %s", s.name, timeout)
	}
	s.log.Warn("mcp tool call failed", zap.Error(err))
	return fmt.Errorf("MCP server %s: %w", s.name, err)
}

// waitSession returns the server's session other than dead, waiting for
// a (re)connection while ctx allows; a server whose next attempt comes
// after ctx's deadline fails at once with its last error.
func (s *server) waitSession(ctx context.Context, timeout time.Duration, dead *sdk.ClientSession) (*sdk.ClientSession, error) {
	for {
		s.mu.Lock()
		cs, changed, gone, st, next, last := s.session, s.changed, s.gone, s.state, s.nextAttempt, s.lastErr
		s.mu.Unlock()
		if cs != nil && cs == dead {
			select {
			case <-gone:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("the server's connection closed and it did not come back within %s", timeout)
			}
		}
		if cs != nil {
			return cs, nil
		}
		switch st {
		case StateDisabled, StateStopped:
			return nil, fmt.Errorf("the server is %s", st)
		case StateRestarting:
			if dl, ok := ctx.Deadline(); ok && next.After(dl) {
				return nil, fmt.Errorf("the server is down (%v); the next restart is in %s", last, next.Sub(s.now()).Round(time.Second))
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if last == nil {
				return nil, fmt.Errorf("the server did not come up within %s", timeout)
			}
			return nil, fmt.Errorf("the server did not come up within %s: %v", timeout, last)
		}
	}
}

// sessionGone reports whether cs is no longer the server's session.
func (s *server) sessionGone(cs *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != cs
}

// Status is one server's state for `gateway mcp list` and the API.
type Status struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	State     State     `json:"state"`
	Since     time.Time `json:"since"`
	Tools     []string  `json:"tools"`
	Restarts  int       `json:"restarts"`
	Error     string    `json:"error,omitempty"`
}

// Status returns every server's state in name order.
func (m *Manager) Status() []Status {
	var out []Status
	for _, s := range m.snapshot() {
		s.mu.Lock()
		st := Status{Name: s.name, Transport: s.cfg.Transport(), State: s.state, Since: s.since, Restarts: s.restarts, Tools: []string{}}
		for _, t := range s.tools {
			st.Tools = append(st.Tools, t.Name)
		}
		if s.lastErr != nil {
			st.Error = s.lastErr.Error()
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}
