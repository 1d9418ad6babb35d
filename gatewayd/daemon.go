package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/internal/logring"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions"
)

// DefaultGrace bounds how long in-flight turns may finish after SIGTERM.
const DefaultGrace = 20 * time.Second

// Options are what a caller injects instead of what the daemon makes
// itself; the zero value runs the daemon as `gateway run` does.
type Options struct {
	// ConfigPath is the file the config was loaded from. When set, Run
	// watches it (and SIGHUP) and hot-reloads; empty, SIGHUP does nothing.
	ConfigPath string
	// Logger receives every component's logs; nil builds one from the
	// config's log section (synced when Run returns).
	Logger *zap.Logger
	// HTTPClient is handed to the channel adapters (fake servers in
	// tests); nil uses their default client.
	HTTPClient *http.Client
	// OnReady is called with the HTTP address once the daemon accepts
	// messages.
	OnReady func(addr string)
	// Now replaces the session clock (reset-policy tests).
	Now func() time.Time
	// ChoicesNow replaces the choice buttons' clock: when they are signed
	// and whether they expired (expiry tests); nil is time.Now.
	ChoicesNow func() time.Time
	// Grace replaces DefaultGrace (crash/restart tests).
	Grace time.Duration
	// OpenBackend replaces OpenBackend (tests inject a backend); the
	// daemon closes what it returns. The config's storage section selects
	// the backend otherwise.
	OpenBackend func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error)
	// Version is the release (main's -X main.version), shown by
	// gateway_build_info; empty: the module's version from the build.
	Version string
}

// Daemon is one gateway process: its parts are built by Run and live
// until Run returns.
type Daemon struct {
	opts    Options
	log     *zap.Logger
	ownLog  bool // log was built by New: Run syncs it
	reg     *prometheus.Registry
	logs    *logring.Ring // the recent log lines (GET /api/logs)
	started atomic.Bool
	addr    atomic.Pointer[string]

	// Set by Run before any adapter, the API or the watcher starts.
	backend  sessions.Backend
	media    *mediastore.Store // the files of replies: <stateDir>/media-out
	disp     *dispatch.Dispatcher
	choices  *channels.ChoiceKeys // signs and verifies choice buttons (choices.go)
	server   *api.Server
	adapters []channels.Adapter
	pairing  *access.PairingStore
	mcp      *mcp.Manager                   // MCP servers' connections; hot-reloaded
	policy   atomic.Pointer[access.Policy]  // the access policy in force
	limits   *limits.Limiter                // per-user limits and budgets (limits.go)
	sched    atomic.Pointer[jobs.Scheduler] // the jobs' scheduler while it runs (jobs.go)
	runner   *agents.Runner                 // the providers' breakers and fallbacks (Status)
	// running are the ids of the agents the runner was built with (lower
	// case): a reload may route only to them (reloadAgents).
	running map[string]bool
	// providers are the names of the providers the runner was built with,
	// sorted: a reload's ambientModels may name only them (routesToRunning).
	providers []string
	// startedAt is when Run began; adapterStates are the leader roles
	// and stops of the adapters (status.go).
	startedAt     time.Time
	adapterStates adapterStates

	mu  sync.Mutex
	cfg *configs.Config // guarded by mu; swapped by hot reload
	// startCfg is the config the daemon started on: what the keys hot
	// reload does not apply (restartOnly) still run with.
	startCfg       *configs.Config
	restartPending prometheus.Gauge // keys of the file that wait for a restart
}

// New returns a daemon for cfg (loaded by configs.Load or LoadBytes). It
// opens nothing: Run does.
func New(cfg *configs.Config, opts Options) (*Daemon, error) {
	if cfg == nil {
		return nil, errors.New("gateway: new daemon: no config")
	}
	if err := cfg.Storage.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: new daemon: %w", err)
	}
	d := &Daemon{opts: opts, log: opts.Logger, cfg: cfg, startCfg: cfg, reg: prometheus.NewRegistry(), logs: logring.New(0)}
	if d.log == nil {
		log, err := newLogger(cfg.Log)
		if err != nil {
			return nil, err
		}
		d.log, d.ownLog = log, true
	}
	// Every line the daemon logs is kept in the ring too, at the same
	// level, for `gateway logs` (GET /api/logs).
	core := d.log.Core()
	d.log = d.log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, d.logs.Core(levelOf(core)))
	}))
	return d, nil
}

// Addr returns the HTTP API's address once the daemon is ready, else "".
func (d *Daemon) Addr() string {
	if a := d.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// API returns the HTTP API handler, or nil before Run has built it (it is
// built before OnReady is called). Tests use it to flip readiness or to
// serve requests without the network.
func (d *Daemon) API() *api.Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.server
}

// config returns the config in force.
func (d *Daemon) config() *configs.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// newLogger builds zap from log.level and log.format: json, or console
// (the same production settings in readable lines: ISO 8601 times, stack
// traces on errors only, never on a warning).
func newLogger(c configs.Log) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := loggerConfig(c.Format, lvl)
	return zc.Build()
}

// levelOf is the lowest level core logs, so the ring keeps what the
// daemon's own log shows.
func levelOf(core zapcore.Core) zapcore.Level {
	for l := zapcore.DebugLevel; l < zapcore.FatalLevel; l++ {
		if core.Enabled(l) {
			return l
		}
	}
	return zapcore.FatalLevel
}

// loggerConfig is zap's production config (no sampling: every line
// counts) in the given encoding.
func loggerConfig(format string, lvl zapcore.Level) zap.Config {
	zc := zap.NewProductionConfig()
	zc.Sampling = nil
	if format == "console" {
		zc.Encoding = "console"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
		zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.OutputPaths = []string{"stderr"}
	return zc
}
