package gatewayd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// assemble builds the runner, the dispatcher with the hot-reloadable
// runtime, the channel adapters and the HTTP API over the open state.
func (d *Daemon) assemble(cfg *configs.Config) error {
	providers, err := agents.NewProviders(cfg.Providers, d.log.Named("providers"))
	if err != nil {
		return fmt.Errorf("gateway: providers: %w", err)
	}
	d.mcp = mcp.New(mcp.Options{Logger: d.log.Named("mcp")})
	if err := d.mcp.Register(d.reg); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	d.mcp.Apply(cfg.MCP)
	runner, err := agents.NewRunner(agents.Options{
		MCP:        d.mcp,
		Sessions:   d.backend,
		Providers:  providers,
		Defaults:   cfg.Agents.Defaults,
		Agents:     cfg.Agents.List,
		Logger:     d.log.Named("agents"),
		Registerer: d.reg,
		Prices:     agents.PricesFrom(cfg.Providers),
		Dispatch: func(ctx context.Context, a agents.Dispatch) error {
			return d.disp.Dispatch(ctx, a)
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
	slices.Sort(names)
	if err := d.buildLimits(cfg); err != nil {
		return err
	}
	disp, err := dispatch.New(dispatch.Options{
		Limits:   d.limits,
		Sessions: d.backend, StateDir: cfg.StateDir, Runner: runner, Logger: d.log.Named("dispatch"), Providers: names,
		Metrics:     dispatch.NewMetrics(d.reg),
		MaxFailures: cfg.Messages.Delivery.MaxFailures, MaxDeaths: cfg.Messages.Delivery.MaxCrashes,
		Caps: map[lanes.Class]int{
			lanes.ClassMain:     cfg.Agents.Defaults.MaxConcurrent,
			lanes.ClassSubagent: cfg.Agents.Defaults.Subagents.MaxConcurrent,
		},
	}, rt)
	if err != nil {
		return fmt.Errorf("gateway: dispatcher: %w", err)
	}
	d.disp = disp

	var chat api.ChatHandler // an interface: never a nil *web.Adapter in it
	if cfg.HTTP.Web {
		webAdapter := web.New(web.Options{Logger: d.log.Named("web"), Lookup: d.lookupWebPeer})
		d.adapters = append(d.adapters, webAdapter)
		chat = webAdapter
	}
	if err := d.buildAdapters(cfg); err != nil {
		return err
	}
	for _, a := range d.adapters {
		disp.Register(a)
	}
	d.buildAPI(cfg, runner, chat, names)
	return nil
}

// buildAPI builds the HTTP API, its metrics and the Telegram webhooks that
// share its listener.
func (d *Daemon) buildAPI(cfg *configs.Config, runner *agents.Runner, chat api.ChatHandler, providers []string) {
	agentIDs := make([]string, 0, len(cfg.Agents.List))
	for _, a := range cfg.Agents.List {
		agentIDs = append(agentIDs, strings.ToLower(a.ID))
	}
	server := api.New(api.Options{
		Sessions: d.backend, Runner: runner, Web: chat, Gatherer: d.reg, Logger: d.log.Named("api"),
		Token: cfg.HTTP.Token, Agents: agentIDs, Providers: providers, Serialise: d.disp.Serialise,
		Health:       d.backend.Journal().Health,
		AllowedHosts: cfg.HTTP.AllowedHosts, AllowedOrigins: cfg.HTTP.AllowedOrigins,
		PublicListener: !listenLoopback(cfg.HTTP.Listen),
		MCP:            d.mcp.Status,
	})
	registerJournalMetrics(d.reg, d.backend.Journal())
	registerReplicaMetrics(d.reg, d.backend, d.log.Named("replicas"))
	for _, a := range d.adapters {
		if tg, ok := a.(*telegram.Adapter); ok && tg.Config().Mode == telegram.ModeWebhook && tg.Config().Webhook.Listen == "" {
			server.Mount(tg.WebhookPath(), tg.WebhookHandler())
			d.log.Info("telegram webhook mounted", zap.String("account_id", tg.AccountID()), zap.String("path", tg.WebhookPath()))
		}
	}
	d.mu.Lock()
	d.server = server
	d.mu.Unlock()
}

// lookupWebPeer maps a web session id back to its conversation (peer).
func (d *Daemon) lookupWebPeer(agentID, sessionID string) (string, bool) {
	st, err := d.backend.Store(strings.ToLower(agentID))
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

func (d *Daemon) buildAdapters(cfg *configs.Config) error {
	for name, acct := range cfg.Channels.Telegram.Accounts {
		a, err := telegram.New(name, acct, telegram.Options{
			Logger:      d.log.Named("telegram"),
			HTTPClient:  d.opts.HTTPClient,
			OffsetStore: newTelegramCursors(d.backend.Cursors(), filepath.Join(cfg.StateDir, "telegram"), d.log.Named("telegram")),
			MentionRequired: func(in channels.Inbound) bool {
				return d.dropUnmentioned(in)
			},
		})
		if err != nil {
			return fmt.Errorf("gateway: channels.telegram.accounts.%s: %w", name, err)
		}
		d.adapters = append(d.adapters, a)
	}
	for name, acct := range cfg.Channels.Discord.Accounts {
		a, err := discord.New(name, acct, discord.Options{Logger: d.log.Named("discord"), HTTPClient: d.opts.HTTPClient,
			// Mention gating follows the hot-reloaded access policy.
			MentionRequired: d.dropUnmentioned,
			Room:            func(in channels.Inbound) channels.Room { return d.policy.Load().Room(in) }})
		if err != nil {
			return fmt.Errorf("gateway: channels.discord.accounts.%s: %w", name, err)
		}
		d.adapters = append(d.adapters, a)
	}
	return nil
}

// dropUnmentioned is the adapters' early filter: an unmentioned group
// message is dropped before the dispatcher only when the hot-reloaded policy
// requires a mention and its room keeps no history (else the dispatcher
// keeps it as room history).
func (d *Daemon) dropUnmentioned(in channels.Inbound) bool {
	if !d.policy.Load().MentionRequired(in) {
		return false
	}
	return d.disp == nil || !d.disp.KeepsHistory(in)
}
