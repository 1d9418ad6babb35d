package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/websearch"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// assemble builds the runner, the dispatcher with the hot-reloadable
// runtime, the channel adapters (one per account of each row of the channel
// table) and the HTTP API over the open state.
func (d *Daemon) assemble(cfg *configs.Config) error {
	runner, err := d.buildRunner(cfg)
	if err != nil {
		return err
	}
	d.runner, d.running = runner, runningAgents(cfg)
	names := slices.Sorted(maps.Keys(cfg.Providers))
	d.providers = names
	if err := d.buildDispatcher(cfg, runner, names); err != nil {
		return err
	}
	if err := d.buildAdapters(cfg); err != nil {
		return err
	}
	var chat api.ChatHandler // an interface: never a nil *web.Adapter in it
	for _, a := range d.adapters {
		d.disp.Register(a)
		if h, ok := a.(api.ChatHandler); ok {
			chat = h
		}
	}
	d.buildAPI(cfg, runner, chat, names)
	return nil
}

// buildRunner builds the providers, the MCP servers' manager and the agent
// runner. The runner dispatches (subagents, the message tool) through the
// dispatcher built after it.
func (d *Daemon) buildRunner(cfg *configs.Config) (*agents.Runner, error) {
	providers, err := agents.NewProviders(cfg.Providers, d.log.Named("providers"))
	if err != nil {
		return nil, fmt.Errorf("gateway: providers: %w", err)
	}
	// A SIGKILLed daemon's stdio servers' leftovers are stopped at start.
	d.mcp = mcp.New(mcp.Options{Logger: d.log.Named("mcp"), GroupsDir: filepath.Join(cfg.StateDir, "mcp-processes")})
	if err := d.mcp.Register(d.reg); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	d.mcp.Apply(cfg.MCP)
	search, err := websearch.New(cfg.WebSearch, websearch.Options{})
	if err != nil {
		return nil, fmt.Errorf("gateway: webSearch: %w", err)
	}
	// The files of replies live under the state dir whatever the storage
	// backend (issue 23; with PostgreSQL and several replicas, a reply one
	// replica stored and another finishes needs this directory shared,
	// else its files go as text notices).
	d.media = mediastore.New(filepath.Join(cfg.StateDir, "media-out"))
	runner, err := agents.NewRunner(agents.Options{
		Media:          d.media,
		MCP:            d.mcp,
		WebSearch:      search,
		Sessions:       d.backend,
		Providers:      providers,
		Defaults:       cfg.Agents.Defaults,
		Agents:         cfg.Agents.List,
		Logger:         d.log.Named("agents"),
		Registerer:     d.reg,
		Prices:         agents.PricesFrom(cfg.Providers),
		ContextWindows: agents.ContextWindowsFrom(cfg.Providers),
		Dispatch: func(ctx context.Context, a agents.Dispatch) error {
			return d.disp.Dispatch(ctx, a)
		},
		Jobs: agents.JobOptions{Zone: func(agentID string) *time.Location { return d.config().Jobs.Zone(agentID) },
			MaxPerRoom: d.maxJobsPerRoom, Added: d.wakeJobs, Off: !cfg.Jobs.Enabled},
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err) // the runner's errors start "agents: "
	}
	return runner, nil
}

// buildDispatcher builds the hot-reloadable runtime (access policy
// included), the limiter and the dispatcher with its lanes.
func (d *Daemon) buildDispatcher(cfg *configs.Config, runner *agents.Runner, providers []string) error {
	rt, policy, err := d.runtime(cfg)
	if err != nil {
		return err
	}
	d.policy.Store(policy)
	if err := d.buildLimits(cfg); err != nil {
		return err
	}
	if d.choices, err = choiceKeys(cfg, d.opts.ChoicesNow); err != nil {
		return err
	}
	disp, err := dispatch.New(dispatch.Options{
		Limits:   d.limits,
		Choices:  d.choices,
		Media:    d.media,
		Sessions: d.backend, StateDir: cfg.StateDir, Runner: runner, Logger: d.log.Named("dispatch"), Providers: providers,
		Now:         d.opts.Now, // the backend's clock: the reset policy is judged at a record's AcceptedAt
		Metrics:     d.dispatchMetrics(),
		MaxFailures: cfg.Messages.Delivery.MaxFailures, MaxDeaths: cfg.Messages.Delivery.MaxCrashes,
		DeadLetterKeep: cfg.Messages.Delivery.DeadLetters,
		Jobs:           d.jobOptions(cfg), JobGivenUp: d.jobGivenUp,
		Caps: map[lanes.Class]int{
			lanes.ClassMain:     cfg.Agents.Defaults.MaxConcurrent,
			lanes.ClassSubagent: cfg.Agents.Defaults.Subagents.MaxConcurrent,
		},
	}, rt)
	if err != nil {
		return fmt.Errorf("gateway: dispatcher: %w", err)
	}
	d.disp = disp
	d.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_queue_depth_max",
		Help: "Messages waiting in the deepest session queue now (behind its running turn)."},
		func() float64 { return float64(disp.MaxQueueDepth()) }))
	return nil
}

// dispatchMetrics are the dispatcher's collectors, registered, with the
// series of every channel of the channel table and every known reason at
// zero (alerts on their rates work from the first scrape).
func (d *Daemon) dispatchMetrics() *dispatch.Metrics {
	m := dispatch.NewMetrics(d.reg)
	var names []string
	for _, ch := range channelTable() {
		names = append(names, ch.name)
	}
	m.Init(names)
	return m
}

// buildAPI builds the HTTP API, its metrics and the adapters' webhooks that
// share its listener (channelRow.webhook: Telegram's).
func (d *Daemon) buildAPI(cfg *configs.Config, runner *agents.Runner, chat api.ChatHandler, providers []string) {
	agentIDs := make([]string, 0, len(cfg.Agents.List))
	for _, a := range cfg.Agents.List {
		agentIDs = append(agentIDs, strings.ToLower(a.ID))
	}
	server := api.New(api.Options{
		Sessions: d.backend, Runner: runner, Web: chat, Gatherer: d.reg, Logger: d.log.Named("api"),
		Token: cfg.HTTP.Token, Agents: agentIDs, Providers: providers, Serialise: d.disp.Serialise,
		Ended:        d.disp.Ended,
		Health:       d.backend.Journal().Health,
		AllowedHosts: cfg.HTTP.AllowedHosts, AllowedOrigins: cfg.HTTP.AllowedOrigins,
		PublicListener: !listenLoopback(cfg.HTTP.Listen),
		MCP:            d.mcp.Status,
		DeadLetters:    d.disp,
		Send:           operatorSend(d.disp),
		Jobs: jobSettings(cfg, &api.JobSettings{Zone: func(agentID string) *time.Location { return d.config().Jobs.Zone(agentID) },
			MaxPerRoom: d.maxJobsPerRoom, Added: d.wakeJobs, Now: d.opts.Now}),
		Status: func(ctx context.Context) (any, bool) {
			st := d.Status(ctx)
			return st, st.Overall == StatusFailing
		},
		Logs:         d.logs,
		Config:       func() any { return configs.Tree(d.config()) },
		Pairing:      pairingAPI{d},
		MemoryLimits: memoryLimits(cfg.Agents.List),
		Media:        d.media,
		Choices:      d.choices,
	})
	registerJournalMetrics(d.reg, d.backend.Journal())
	registerReplicaMetrics(d.reg, d.backend, d.log.Named("replicas"))
	registerStorageMetrics(d.reg, d.backend)
	for _, a := range d.adapters {
		ch := channelOf(a.Name())
		if ch == nil || ch.webhook == nil {
			continue
		}
		if path, h, ok := ch.webhook(a); ok {
			server.Mount(path, h)
			d.log.Info(ch.name+" webhook mounted", zap.String("account_id", a.AccountID()), zap.String("path", path))
		}
	}
	d.mu.Lock()
	d.server = server
	d.mu.Unlock()
}

// lookupWebPeer maps a web session id back to its conversation (peer); a
// failure to read the index is an error (the chat answers 503), not a
// session that is not there.
func (d *Daemon) lookupWebPeer(agentID, sessionID string) (string, bool, error) {
	if sessions.CheckSessionID(sessionID) != nil {
		return "", false, nil // no session has such an id
	}
	st, err := d.backend.Store(strings.ToLower(agentID))
	if err != nil {
		return "", false, fmt.Errorf("gateway: web session lookup: %w", err)
	}
	e, ok, err := st.GetByID(sessionID)
	if errors.Is(err, sessions.ErrNotFound) || (err == nil && !ok) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("gateway: web session lookup: %w", err)
	}
	k, err := routing.Parse(e.SessionKey)
	if err != nil || k.Channel != web.Name || k.Kind != routing.Direct {
		return "", false, nil
	}
	return k.Peer, true, nil
}

// slashAllowed tells the Discord adapters where to offer slash commands: a
// guild room the hot-reloaded policy admits for a mentioned message, or
// would for a sender its rule lists. A group check touches no pairing
// state.
func (d *Daemon) slashAllowed(in channels.Inbound) bool {
	dec := d.policy.Load().Check(in)
	return dec.Allowed() || dec.Reason == access.ReasonSenderNotListed
}

// dropUnmentioned is the adapters' early filter: an unmentioned group
// message is dropped before the dispatcher only when the hot-reloaded policy
// requires a mention, its room keeps no history (else the dispatcher
// keeps it as room history) and it does not address the bot all the same
// (/activation always, the bot's name where mentionByName).
func (d *Daemon) dropUnmentioned(in channels.Inbound) bool {
	if !d.policy.Load().MentionRequired(in) {
		return false
	}
	return d.disp == nil || !(d.disp.KeepsHistory(in) || d.disp.Addressed(in))
}
