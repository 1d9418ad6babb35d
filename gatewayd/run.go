package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// errAlreadyRan refuses a second Run: a Daemon's parts live once.
var errAlreadyRan = errors.New("gateway: run: the daemon already ran")

// Run assembles the daemon, serves until ctx ends, then shuts down
// gracefully (adapters first, in-flight turns within Grace, then the HTTP
// server) and returns. It returns early with an error when a part cannot
// start or the HTTP server fails. Run may be called once.
func (d *Daemon) Run(ctx context.Context) error {
	if !d.started.CompareAndSwap(false, true) {
		return errAlreadyRan
	}
	if d.ownLog {
		defer func() { _ = d.log.Sync() }()
	}
	// SIGHUP asks for a reload for the whole run, not only while the
	// config watcher runs: unhandled, it kills the process, and systemd
	// counts a death by SIGHUP as clean (Restart=on-failure leaves the
	// service down). One sent while the daemon starts waits for the
	// watcher; one sent while it stops is dropped.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	started := time.Now()
	d.startedAt = started.UTC()
	cfg := d.config()
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(d.opts.Version))
	if err := secureStateDir(cfg.StateDir, d.log); err != nil {
		return err
	}
	release, err := lockStateDir(cfg.StateDir)
	if err != nil {
		return err
	}
	defer release()
	if err := d.openState(ctx, cfg); err != nil {
		return err
	}
	defer func() {
		if err := d.backend.Close(); err != nil {
			d.log.Error("closing sessions failed", zap.Error(err))
		}
	}()
	if err := d.assemble(cfg); err != nil {
		return err
	}
	d.logNotices(cfg)
	return d.serve(ctx, cfg, started, hup)
}

// openState opens the configured storage backend, checks that the ingress
// journal takes writes, and opens the pairing store shared by every policy
// generation.
func (d *Daemon) openState(ctx context.Context, cfg *configs.Config) error {
	open := d.opts.OpenBackend
	if open == nil {
		open = func(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
			return OpenBackend(ctx, cfg, BackendOptions{Logger: d.log.Named("sessions"), Now: d.opts.Now,
				Observe: storeTimings(d.reg)})
		}
	}
	b, err := open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("gateway: open sessions: %w", err)
	}
	if err := b.Journal().Health(); err != nil {
		_ = b.Close()
		return fmt.Errorf("gateway: ingress journal: %w", err)
	}
	if d.pairing, err = openPairingStore(b, cfg, d.log.Named("pairing")); err != nil {
		_ = b.Close()
		return err
	}
	st := b.Status(ctx)
	d.log.Info("storage open", zap.String("backend", st.Kind), zap.String("location", st.Location),
		zap.Int64("schema_version", st.SchemaVersion))
	d.backend = b
	return nil
}

// serve starts the listener, the adapters and the background loops, reports
// ready, and on ctx's end (or an HTTP server failure) shuts down in order.
func (d *Daemon) serve(ctx context.Context, cfg *configs.Config, started time.Time, hup <-chan os.Signal) error {
	log := d.log
	stopPprof, err := startPprof(log)
	if err != nil {
		return err
	}
	defer stopPprof()
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", cfg.HTTP.Listen, err)
	}
	conns := newConnGovernor(cfg.HTTP.MaxConnections, cfg.HTTP.PerClientCap())
	d.reg.MustRegister(conns.evicted, conns.refused)
	httpSrv := newHTTPServer(d.server, defaultHTTPLimits)
	httpSrv.RegisterOnShutdown(d.server.EndStreams) // a `gateway logs -f` or a chat stream left waiting does not hold the shutdown
	conns.install(httpSrv)
	ln = conns.listener(ln)
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Serve(ln) }()

	stopMCP := d.runMCP(ctx)
	// What the last run (or a dead predecessor, on PostgreSQL) left is
	// queued before any channel takes a message: each session's older work
	// is then ahead of its newer messages on the lanes. With the channels
	// first, a chat's message polled right after a restart ran before the
	// chat's message the killed process had accepted and not answered, and
	// one reply answered both (PostgreSQL, where Resume's take-over is a
	// query; files won the race, as a rule).
	if _, err := d.disp.Resume(ctx); err != nil {
		log.Error("resuming journaled messages failed", zap.Error(err))
	}
	stopAdapters := d.runAdapters(ctx)
	waitLoops := d.runLoops(ctx, hup)
	stopJobs := d.runJobs(ctx, cfg)
	stopLimits := d.runLimits(ctx)
	d.waitAccepting(ctx)
	d.server.SetReady(true)
	addr := ln.Addr().String()
	d.addr.Store(&addr)
	log.Info("gateway ready", zap.String("http_listen", addr),
		zap.Int("adapters", len(d.adapters)), zap.Duration("startup", time.Since(started)))
	if d.opts.OnReady != nil {
		d.opts.OnReady(addr)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		httpDone <- err // for the wait below
		runErr = fmt.Errorf("gateway: http server: %w", err)
	}
	log.Info("shutting down")
	d.server.SetReady(false)
	stopJobs() // before the adapters and the dispatcher: no occurrence enters a shutdown
	stopAdapters()
	d.shutdown(httpSrv)
	stopLimits() // after the turns: their charges are flushed
	stopMCP()    // after the in-flight turns, which may still call MCP tools
	if err := <-httpDone; !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		log.Warn("http server", zap.Error(err))
	}
	waitLoops()
	log.Info("stopped")
	return runErr
}

// runAdapters starts every channel adapter (a singleton under its leader
// role on a shared backend: leader.go); stop ends them and waits for
// them. They outlive ctx until stop: at shutdown they stop first, so no new
// message arrives while in-flight turns finish.
func (d *Daemon) runAdapters(ctx context.Context) (stop func()) {
	adapterCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, a := range d.adapters {
		wg.Add(1)
		go func(a channels.Adapter) {
			defer wg.Done()
			if err := d.runAdapter(adapterCtx, a); err != nil && adapterCtx.Err() == nil {
				as := d.adapterStates.of(channels.AccountOf(a))
				as.mu.Lock()
				as.stopped = err
				as.mu.Unlock()
				d.log.Error("channel adapter stopped", zap.String("channel", a.Name()),
					zap.String("account_id", a.AccountID()), zap.Error(err))
			}
		}(a)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// runMCP runs the MCP servers' supervisors until stop, which the
// shutdown calls once in-flight turns are done (their tools stay up
// during the grace period).
func (d *Daemon) runMCP(ctx context.Context) (stop func()) {
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.mcp.Run(mctx) // returns nil when mctx ends
	}()
	return func() {
		cancel()
		<-done
	}
}

// runLoops starts the background loops that run until ctx ends: the config
// watcher (hot reload, on file changes and on hup) and the pruning of
// downloaded media; wait waits for them.
func (d *Daemon) runLoops(ctx context.Context, hup <-chan os.Signal) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(2)
	reloads := reloadsTotal(d.reg) // registered before the daemon is ready
	d.restartPending = restartPendingGauge(d.reg)
	go func() {
		defer wg.Done()
		d.watchConfig(ctx, reloads, hup)
	}()
	go func() {
		defer wg.Done()
		d.disp.RunMediaPrune(ctx, mediaPruneEvery)
	}()
	return wg.Wait
}

// accepter is an adapter that says when it takes messages (the web chat).
type accepter interface {
	Accepting() <-chan struct{}
}

// waitAccepting returns once every adapter that says when it takes
// messages does (the web chat, when enabled), so that ready means a chat
// request is not answered "not ready", or when ctx ends.
func (d *Daemon) waitAccepting(ctx context.Context) {
	for _, a := range d.adapters {
		if w, ok := a.(accepter); ok {
			select {
			case <-w.Accepting():
			case <-ctx.Done():
			}
		}
	}
}

// shutdown lets in-flight turns finish within the grace period, then
// closes the HTTP server.
func (d *Daemon) shutdown(httpSrv *http.Server) {
	grace := DefaultGrace
	if d.opts.Grace > 0 {
		grace = d.opts.Grace
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	d.disp.Shutdown(graceCtx)
	shCtx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := httpSrv.Shutdown(shCtx); err != nil {
		d.log.Warn("http shutdown", zap.Error(err))
	}
}
