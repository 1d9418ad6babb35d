package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
)

// reloadDebounce lets an editor finish a save (write, rename, chmod) before
// the file is read.
const reloadDebounce = 200 * time.Millisecond

var reloadsTotal = func(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_config_reloads_total", Help: "Config reloads by result (applied, rejected, unchanged).",
	}, []string{"result"})
	for _, r := range []string{"applied", "rejected", "unchanged"} {
		c.WithLabelValues(r) // at zero from the start: alerts on increase() work at once
	}
	reg.MustRegister(c)
	return c
}

// restartPendingGauge counts the keys whose value in the applied file
// differs from the one the daemon runs with until a restart (restartOnly
// against the config it started on): 0 once the file and the running
// daemon agree again, by a restart or by an edit that reverts them.
func restartPendingGauge(reg *prometheus.Registry) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gateway_config_restart_pending",
		Help: "Config keys changed by a hot reload that apply only after a restart (they still run with their start-up value).",
	})
	reg.MustRegister(g)
	return g
}

// watchConfig reloads the config file when it changes (any save style: in
// place, rename over, vim's backup dance, delete and recreate, a symlink
// swapped as a Kubernetes ConfigMap is: configWatch) or on a SIGHUP (hup:
// Run receives them), until ctx ends.
func (d *Daemon) watchConfig(ctx context.Context, metric *prometheus.CounterVec, hup <-chan os.Signal) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	var watch *configWatch
	if d.opts.ConfigPath != "" {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			d.log.Error("config watcher unavailable; SIGHUP still reloads", zap.Error(err))
		} else {
			defer w.Close()
			if watch, err = newConfigWatch(w, d.opts.ConfigPath, d.log); err != nil {
				d.log.Error("config watcher unavailable; SIGHUP still reloads", zap.Error(err))
			} else {
				events, errs = w.Events, w.Errors
			}
		}
	}
	var timer *time.Timer
	var fire <-chan time.Time
	// A save between the daemon's load of the file and the watch fired
	// no event: read the file once now. One that does not load may be
	// being written (its end fires an event) or be invalid, which no
	// event will follow: it is read again after the debounce, reported
	// then when still invalid.
	if events != nil && !d.reload(metric, true) {
		timer = time.NewTimer(reloadDebounce)
		fire = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-hup:
			d.reload(metric, false)
		case ev := <-events:
			if !watch.touches(ev) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(reloadDebounce)
			} else {
				timer.Reset(reloadDebounce)
			}
			fire = timer.C
		case err := <-errs:
			d.log.Warn("config watcher error", zap.Error(err))
		case <-fire:
			fire = nil
			if _, err := os.Stat(d.opts.ConfigPath); err != nil {
				continue // removed; a recreate will fire again
			}
			d.reload(metric, false)
		}
	}
}

// reload loads and applies the config file; an invalid file is rejected and
// the running config stays. quiet counts and logs nothing for a file that
// is unchanged or does not load (the check at the watch's start), and
// returns false for one that does not load; reload returns true otherwise.
func (d *Daemon) reload(metric *prometheus.CounterVec, quiet bool) bool {
	if d.opts.ConfigPath == "" {
		return true
	}
	reject := func(err error) {
		metric.WithLabelValues("rejected").Inc()
		d.log.Error("config reload rejected; keeping the running config", zap.String("path", d.opts.ConfigPath), zap.Error(err))
	}
	cfg, err := configs.LoadSaved(d.opts.ConfigPath)
	d.mu.Lock()
	old := d.cfg
	d.mu.Unlock()
	if errors.Is(err, configs.ErrEmpty) {
		// Unchanged when the daemon runs the defaults an empty file
		// means (it started on one).
		if def, derr := configs.LoadBytes(nil, os.Environ()); derr == nil && reflect.DeepEqual(old, def) {
			cfg, err = def, nil
		}
	}
	if err != nil && quiet {
		return false
	}
	if err != nil {
		reject(err)
		return true
	}
	if reflect.DeepEqual(old, cfg) {
		if !quiet {
			metric.WithLabelValues("unchanged").Inc()
			// An edit that changed nothing may have been to a key the
			// environment overrides: say so.
			for _, n := range cfg.EnvShadowed() {
				d.log.Warn("config notice", zap.String("notice", n))
			}
		}
		return true
	}
	if err := d.routesToRunning(cfg); err != nil {
		reject(err)
		return true
	}
	rt, policy, err := d.runtime(cfg)
	if err != nil {
		reject(err)
		return true
	}
	if err := d.backend.SetMaintenance(cfg.Session.Maintenance); err != nil {
		reject(err)
		return true
	}
	if err := d.limits.SetConfig(cfg.Limits, cfg.Commands.Owners); err != nil {
		reject(err)
		return true
	}
	d.disp.SetRuntime(rt)
	d.policy.Store(policy)
	d.reloadAdapters(old, cfg)
	d.mcp.Apply(cfg.MCP) // servers added, removed or changed
	d.reloadJobs(cfg)
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	metric.WithLabelValues("applied").Inc()
	// Against the config the daemon started on, not the last one applied:
	// a key changed two edits ago still waits for its restart (said again),
	// and one edited back to its running value no longer does.
	pending := restartOnly(d.startCfg, cfg)
	for _, k := range pending {
		d.log.Warn("config key changed but needs a restart to apply", zap.String("key", k))
	}
	if d.restartPending != nil {
		d.restartPending.Set(float64(len(pending)))
	}
	d.logNotices(cfg)
	d.log.Info("config reloaded", zap.String("path", d.opts.ConfigPath))
	return true
}

// runningAgents are the ids of the agents a runner built from cfg runs.
func runningAgents(cfg *configs.Config) map[string]bool {
	ids := map[string]bool{}
	for _, a := range cfg.Agents.List {
		ids[strings.ToLower(a.ID)] = true
	}
	return ids
}

// routesToRunning checks that cfg routes messages only to agents the
// daemon runs, and runs rooms' ambient turns only on its providers.
// Agents and providers are built at start (agents.list and providers need
// a restart): an edit that adds an agent and routes a chat to it (a
// binding, a room's agentId, or the new agent listed first, so the
// default) would have that chat answered "This agent is not configured."
// until the restart, and one that adds a provider and makes a room's
// ambientModel one of its models would have every ambient turn of the
// room fail. It is rejected instead, whole, and the running config stays.
func (d *Daemon) routesToRunning(cfg *configs.Config) error {
	for _, r := range cfg.AgentRefs() {
		if !d.running[r.AgentID] {
			return fmt.Errorf("%s: agent %q is not running: a new agent starts only on a restart (restart the daemon to apply this edit)", r.Key, r.AgentID)
		}
	}
	for _, r := range cfg.ProviderRefs() {
		if !slices.Contains(d.providers, r.Provider) {
			return fmt.Errorf("%s: provider %q is not running: a new provider starts only on a restart (restart the daemon to apply this edit)", r.Key, r.Provider)
		}
	}
	return nil
}

// reloadAdapters hands each running adapter what its channel applies
// itself after a reload (channelRow.reload).
func (d *Daemon) reloadAdapters(old, cfg *configs.Config) {
	for _, a := range d.adapters {
		if ch := channelOf(a.Name()); ch != nil && ch.reload != nil {
			ch.reload(a, old, cfg)
		}
	}
}

// restartOnly lists changed keys that hot reload does not apply.
func restartOnly(a, b *configs.Config) []string {
	var out []string
	if a.StateDir != b.StateDir {
		out = append(out, "stateDir")
	}
	// The backend is opened once, at start: a reload keeps the open one.
	if !reflect.DeepEqual(a.Storage, b.Storage) {
		out = append(out, "storage")
	}
	if !reflect.DeepEqual(a.HTTP, b.HTTP) {
		out = append(out, "http")
	}
	if !reflect.DeepEqual(a.Log, b.Log) {
		out = append(out, "log")
	}
	if !reflect.DeepEqual(a.Providers, b.Providers) {
		out = append(out, "providers")
	}
	if !reflect.DeepEqual(a.Agents, b.Agents) {
		out = append(out, "agents")
	}
	if !reflect.DeepEqual(a.WebSearch, b.WebSearch) {
		out = append(out, "webSearch")
	}
	// The dispatcher is made with the delivery limits, the backend and the
	// pairing store with the lock timeout.
	if a.Messages.Delivery != b.Messages.Delivery {
		out = append(out, "messages.delivery")
	}
	if a.Session.LockTimeout != b.Session.LockTimeout {
		out = append(out, "session.lockTimeout")
	}
	if a.Jobs.Lease != b.Jobs.Lease { // the scheduler is made with it at start
		out = append(out, "jobs.lease")
	}
	if a.Jobs.Enabled != b.Jobs.Enabled { // the scheduler runs or not from the start
		out = append(out, "jobs.enabled")
	}
	// Access lists, room settings and media caps apply at once (the
	// policy, dispatch.Media); the accounts themselves (a new bot, a
	// changed token, mode or endpoint) need their adapters restarted.
	for _, ch := range channelTable() {
		if ch.restartOnly != nil {
			out = append(out, ch.restartOnly(a, b)...)
		}
	}
	return out
}

// changedAccounts names the accounts added, removed or changed beyond what
// strip removes (the access fields hot reload applies).
func changedAccounts[C any](prefix string, a, b map[string]C, strip func(C) C) []string {
	var out []string
	for name, ca := range a {
		cb, ok := b[name]
		switch {
		case !ok:
			out = append(out, prefix+"."+name+" (removed)")
		case !reflect.DeepEqual(strip(ca), strip(cb)):
			out = append(out, prefix+"."+name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, prefix+"."+name+" (added)")
		}
	}
	slices.Sort(out)
	return out
}

// logNotices logs what cfg sets that will not do what it says
// (configs.Config.Notices), at start and at each reload.
func (d *Daemon) logNotices(cfg *configs.Config) {
	for _, n := range cfg.Notices() {
		d.log.Warn("config notice", zap.String("notice", n))
	}
}
