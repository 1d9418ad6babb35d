package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// shutdownGrace bounds how long in-flight turns may finish after SIGTERM.
const shutdownGrace = 20 * time.Second

// deps lets tests and the benchmark inject what the real daemon makes itself.
type deps struct {
	Logger     *zap.Logger
	HTTPClient *http.Client // for channel adapters (fake servers in tests)
	// OnReady is called with the HTTP address once the daemon accepts messages.
	OnReady func(addr string)
	// Now replaces the session clock (reset-policy tests).
	Now func() time.Time
	// Grace replaces shutdownGrace (crash/restart tests).
	Grace time.Duration
}

// daemon is one running gateway.
type daemon struct {
	cfgPath  string
	log      *zap.Logger
	mgr      *sessions.Manager
	disp     *dispatch.Dispatcher
	server   *api.Server
	adapters []channels.Adapter
	reg      *prometheus.Registry
	pairing  *access.PairingStore
	policy   atomic.Pointer[access.Policy] // the access policy in force

	mu  sync.Mutex
	cfg *configs.Config // guarded by mu; swapped by hot reload
}

func runDaemon(ctx context.Context, cfgPath string, dp *deps) error {
	cfg, err := configs.Load(cfgPath)
	if err != nil {
		return err
	}
	if dp == nil {
		dp = &deps{}
	}
	log := dp.Logger
	if log == nil {
		if log, err = newLogger(cfg.Log); err != nil {
			return err
		}
		defer func() { _ = log.Sync() }()
	}
	return serve(ctx, cfg, cfgPath, log, dp)
}

// serve runs the daemon until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, cfg *configs.Config, cfgPath string, log *zap.Logger, dp *deps) error {
	started := time.Now()
	d := &daemon{cfgPath: cfgPath, log: log, cfg: cfg, reg: prometheus.NewRegistry()}
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := secureStateDir(cfg.StateDir, log); err != nil {
		return err
	}
	release, err := lockStateDir(cfg.StateDir)
	if err != nil {
		return err
	}
	defer release()
	mgr, err := sessions.Open(sessions.Options{
		StateDir:    cfg.StateDir,
		CacheTTL:    -1,
		LockTimeout: cfg.Session.LockTimeout,
		Maintenance: cfg.Session.Maintenance,
		Reset:       cfg.Session.ResetConfig(),
		Logger:      log.Named("sessions"),
		Now:         dp.Now,
	})
	if err != nil {
		return fmt.Errorf("gateway: open sessions: %w", err)
	}
	d.mgr = mgr
	if err := mgr.Journal().Health(); err != nil {
		_ = mgr.Close()
		return fmt.Errorf("gateway: ingress journal: %w", err)
	}
	if d.pairing, err = openPairingStore(cfg, log.Named("pairing")); err != nil {
		return err
	}
	defer func() {
		if err := mgr.Close(); err != nil {
			log.Error("closing sessions failed", zap.Error(err))
		}
	}()
	providers, err := agents.NewProviders(cfg.Providers, log.Named("providers"))
	if err != nil {
		return fmt.Errorf("gateway: providers: %w", err)
	}
	var disp *dispatch.Dispatcher
	runner, err := agents.NewRunner(agents.Options{
		Sessions:  mgr,
		Providers: providers,
		Defaults:  cfg.Agents.Defaults,
		Agents:    cfg.Agents.List,
		Logger:    log.Named("agents"),
		Dispatch: func(ctx context.Context, a agents.Dispatch) error {
			return disp.Dispatch(ctx, a)
		},
	})
	if err != nil {
		return fmt.Errorf("gateway: agents: %w", err)
	}
	rt, policy, err := d.runtime(cfg)
	if err != nil {
		return err
	}
	d.policy.Store(policy)
	names := make([]string, 0, len(cfg.Providers))
	for n := range cfg.Providers {
		names = append(names, n)
	}
	disp, err = dispatch.New(dispatch.Options{
		Sessions: mgr, Runner: runner, Logger: log.Named("dispatch"), Providers: names,
		Metrics:     dispatch.NewMetrics(d.reg),
		MaxFailures: cfg.Messages.Delivery.MaxFailures, MaxDeaths: cfg.Messages.Delivery.MaxCrashes,
		Caps: map[lanes.Class]int{
			lanes.ClassMain:     cfg.Agents.Defaults.MaxConcurrent,
			lanes.ClassSubagent: cfg.Agents.Defaults.Subagents.MaxConcurrent,
		},
	}, rt)
	if err != nil {
		return err
	}
	d.disp = disp

	var webAdapter *web.Adapter
	if cfg.HTTP.Web {
		webAdapter = web.New(web.Options{Logger: log.Named("web"), Lookup: d.lookupWebPeer})
		d.adapters = append(d.adapters, webAdapter)
	}
	if err := d.buildAdapters(cfg, dp); err != nil {
		return err
	}
	for _, a := range d.adapters {
		disp.Register(a)
	}

	agentIDs := make([]string, 0, len(cfg.Agents.List))
	for _, a := range cfg.Agents.List {
		agentIDs = append(agentIDs, strings.ToLower(a.ID))
	}
	d.server = api.New(api.Options{
		Sessions: mgr, Runner: runner, Web: webAdapter, Gatherer: d.reg, Logger: log.Named("api"),
		Token: cfg.HTTP.Token, Agents: agentIDs, Serialise: disp.Serialise,
		Health:       mgr.Journal().Health,
		AllowedHosts: cfg.HTTP.AllowedHosts, AllowedOrigins: cfg.HTTP.AllowedOrigins,
		PublicListener: !listenLoopback(cfg.HTTP.Listen),
	})
	registerJournalMetrics(d.reg, mgr.Journal())
	for _, a := range d.adapters {
		if tg, ok := a.(*telegram.Adapter); ok && tg.Config().Mode == telegram.ModeWebhook && tg.Config().Webhook.Listen == "" {
			d.server.Mount(tg.WebhookPath(), tg.WebhookHandler())
			log.Info("telegram webhook mounted", zap.String("account_id", tg.AccountID()), zap.String("path", tg.WebhookPath()))
		}
	}
	if err := startPprof(ctx, log); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", cfg.HTTP.Listen, err)
	}
	ln = limitListener(ln, cfg.HTTP.MaxConnections)
	httpSrv := newHTTPServer(d.server, defaultHTTPLimits)
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Serve(ln) }()

	// Adapters run until adapterCtx ends; they stop first at shutdown.
	adapterCtx, stopAdapters := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, a := range d.adapters {
		wg.Add(1)
		go func(a channels.Adapter) {
			defer wg.Done()
			if err := a.Run(adapterCtx, disp.Handle); err != nil && adapterCtx.Err() == nil {
				log.Error("channel adapter stopped", zap.String("channel", a.Name()),
					zap.String("account_id", a.AccountID()), zap.Error(err))
			}
		}(a)
	}
	if _, err := disp.Resume(ctx); err != nil {
		log.Error("resuming journaled messages failed", zap.Error(err))
	}
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		d.watchConfig(ctx)
	}()
	d.server.SetReady(true)
	log.Info("gateway ready", zap.String("http_listen", ln.Addr().String()),
		zap.Int("adapters", len(d.adapters)), zap.Duration("startup", time.Since(started)))
	if dp.OnReady != nil {
		dp.OnReady(ln.Addr().String())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		runErr = fmt.Errorf("gateway: http server: %w", err)
	}
	log.Info("shutting down")
	d.server.SetReady(false)
	stopAdapters()
	wg.Wait()
	grace := shutdownGrace
	if dp.Grace > 0 {
		grace = dp.Grace
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	disp.Shutdown(graceCtx)
	shCtx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := httpSrv.Shutdown(shCtx); err != nil {
		log.Warn("http shutdown", zap.Error(err))
	}
	<-reloadDone
	log.Info("stopped")
	return runErr
}

// runtime builds the hot-reloadable part of cfg.
func (d *daemon) runtime(cfg *configs.Config) (*dispatch.Runtime, *access.Policy, error) {
	resolver, err := routing.NewResolver(cfg.RoutingConfig())
	if err != nil {
		return nil, nil, err
	}
	policy, err := accessPolicy(cfg, d.pairing, d.log.Named("access"))
	if err != nil {
		return nil, nil, err
	}
	return &dispatch.Runtime{Resolver: resolver, Access: accessFunc(policy), Queue: cfg.Messages.Queue,
		Reset: cfg.Session.ResetConfig(), Room: roomFunc(cfg)}, policy, nil
}

func (d *daemon) lookupWebPeer(agentID, sessionID string) (string, bool) {
	st, err := d.mgr.Store(strings.ToLower(agentID))
	if err != nil {
		return "", false
	}
	e, ok, err := st.GetByID(sessionID)
	if err != nil || !ok {
		return "", false
	}
	k, err := routing.Parse(e.SessionKey)
	if err != nil || k.Channel != web.Name || k.Kind != routing.Direct {
		return "", false
	}
	return k.Peer, true
}

func (d *daemon) buildAdapters(cfg *configs.Config, dp *deps) error {
	for name, acct := range cfg.Channels.Telegram.Accounts {
		a, err := telegram.New(name, acct, telegram.Options{
			Logger:      d.log.Named("telegram"),
			HTTPClient:  dp.HTTPClient,
			OffsetStore: telegram.FileOffsetStore(filepath.Join(cfg.StateDir, "telegram")),
			MentionRequired: func(in channels.Inbound) bool {
				return d.policy.Load().MentionRequired(in)
			},
		})
		if err != nil {
			return fmt.Errorf("gateway: channels.telegram.accounts.%s: %w", name, err)
		}
		d.adapters = append(d.adapters, a)
	}
	for name, acct := range cfg.Channels.Discord.Accounts {
		a, err := discord.New(name, acct, discord.Options{Logger: d.log.Named("discord"), HTTPClient: dp.HTTPClient,
			// Mention gating follows the hot-reloaded access policy.
			MentionRequired: func(in channels.Inbound) bool { return d.policy.Load().MentionRequired(in) }})
		if err != nil {
			return fmt.Errorf("gateway: channels.discord.accounts.%s: %w", name, err)
		}
		d.adapters = append(d.adapters, a)
	}
	return nil
}

var errNoConfigFile = errors.New("no config file to watch")
