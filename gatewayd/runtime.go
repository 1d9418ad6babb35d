package gatewayd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// runtime builds the hot-reloadable part of cfg.
func (d *Daemon) runtime(cfg *configs.Config) (*dispatch.Runtime, *access.Policy, error) {
	resolver, err := routing.NewResolver(cfg.RoutingConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: routing: %w", err)
	}
	policy, err := accessPolicy(cfg, d.pairing, d.log.Named("access"), d.removedAccounts(cfg)...)
	if err != nil {
		return nil, nil, err
	}
	media, err := mediaRuntime(cfg, d.log.Named("media"))
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: media.audio: %w", err)
	}
	return &dispatch.Runtime{Resolver: resolver, Access: accessFunc(policy), Admits: admitsFunc(policy), Queue: cfg.Messages.Queue,
		Inbound: cfg.Messages.Inbound, Reset: cfg.Session.ResetConfig(), Room: roomFunc(policy), Media: media,
		ConfigNames: configNames(cfg)}, policy, nil
}

// removedAccounts are the accounts of running adapters that cfg no longer
// configures: a reload took them out, and their adapters run until a
// restart (restartOnly says so). The config in force gives them no access
// rules, so they admit nobody: judged by the defaults of an account
// without config, a sender approved by pairing would still reach an
// agent, and strangers would be handed pairing codes.
func (d *Daemon) removedAccounts(cfg *configs.Config) []access.Account {
	var out []access.Account
	for _, a := range d.adapters {
		ch := channelOf(a.Name())
		if ch == nil || ch.access == nil || slices.Contains(ch.accounts(cfg), a.AccountID()) {
			continue
		}
		out = append(out, access.Account{Channel: a.Name(), AccountID: a.AccountID()})
	}
	return out
}

// RouteRuntime is the routing part of the runtime a daemon would run with
// cfg (bindings, dmScope, identity links and room settings): what
// `gateway route` explains without starting one.
func RouteRuntime(cfg *configs.Config) (*dispatch.Runtime, error) {
	resolver, err := routing.NewResolver(cfg.RoutingConfig())
	if err != nil {
		return nil, fmt.Errorf("gateway: routing: %w", err)
	}
	policy, err := accessPolicy(cfg, nil, zap.NewNop())
	if err != nil {
		return nil, err
	}
	return &dispatch.Runtime{Resolver: resolver, Room: roomFunc(policy)}, nil
}

// openPairingStore opens the pairing store shared by every policy
// generation, over the backend's pairing state.
func openPairingStore(b sessions.Backend, cfg *configs.Config, log *zap.Logger) (*access.PairingStore, error) {
	return access.NewPairingStore(b.Pairing(), access.StoreOptions{Logger: log, LockTimeout: cfg.Session.LockTimeout}), nil
}

// accessPolicy builds the access policy of every channel account in cfg.
// The removed accounts (still running, absent from cfg) admit nobody.
func accessPolicy(cfg *configs.Config, store *access.PairingStore, log *zap.Logger, removed ...access.Account) (*access.Policy, error) {
	accounts := map[access.Account]access.Config{}
	for _, a := range removed {
		accounts[a] = access.Config{DMPolicy: access.DMDisabled, GroupPolicy: access.GroupDisabled}
	}
	for _, ch := range channelTable() {
		if ch.access == nil {
			continue
		}
		for _, id := range ch.accounts(cfg) {
			accounts[access.Account{Channel: ch.name, AccountID: id}] = ch.access(cfg, id)
		}
	}
	p, err := access.New(accounts, access.Options{Store: store, Logger: log, Owners: cfg.Commands.Owners,
		PlatformAdmins: cfg.Commands.PlatformAdmins})
	if err != nil {
		return nil, fmt.Errorf("gateway: access policy: %w", err)
	}
	return p, nil
}

// accessFunc adapts a policy to the dispatcher. A channel without access
// rules in the channel table (web) is reached only through the
// (token-protected when public) HTTP API: it is allowed.
// A group sender the policy does not privilege is marked for the platform
// admin check (commands.platformAdmins), which the dispatcher makes only
// for a privileged command.
func accessFunc(p *access.Policy) func(in channels.Inbound) dispatch.Verdict {
	open := openChannels()
	return func(in channels.Inbound) dispatch.Verdict {
		if open[in.Channel] {
			return dispatch.Verdict{Allow: true, Privileged: true}
		}
		d := p.Check(in)
		if !d.Allowed() {
			v := dispatch.Verdict{Reply: d.Reply, Reason: d.Reason, Unaddressed: d.Reason == access.ReasonNotMentioned}
			if v.Unaddressed { // the dispatcher may yet admit it (/activation always, mentionByName)
				v.Privileged = p.Privileged(in)
				v.AskPlatform = !v.Privileged && p.AskPlatform(in)
			}
			return v
		}
		privileged := p.Privileged(in)
		return dispatch.Verdict{Allow: true, Privileged: privileged, AskPlatform: !privileged && p.AskPlatform(in)}
	}
}

// admitsFunc adapts a policy's second look at a message accepted earlier
// (access.Policy.Admits) to the dispatcher; channels without access rules
// (web) are open, as in accessFunc.
func admitsFunc(p *access.Policy) func(in channels.Inbound) (bool, string) {
	open := openChannels()
	return func(in channels.Inbound) (bool, string) {
		if open[in.Channel] {
			return true, ""
		}
		d := p.Admits(in)
		return d.Allowed(), d.Reason
	}
}

// roomFunc adapts a policy's room settings to the dispatcher. A channel
// without access rules (web) has no room configuration.
func roomFunc(p *access.Policy) func(in channels.Inbound) channels.Room {
	open := openChannels()
	return func(in channels.Inbound) channels.Room {
		if open[in.Channel] {
			return channels.DefaultRoom(in.Channel)
		}
		return p.Room(in)
	}
}

// mediaPruneEvery is how often downloads of ended sessions are removed.
const mediaPruneEvery = 10 * time.Minute

// mediaRuntime builds the hot-reloadable media settings: per-account size
// caps (mediaMaxMb) and the transcriber of media.audio.
func mediaRuntime(cfg *configs.Config, log *zap.Logger) (dispatch.Media, error) {
	caps := map[channels.AccountKey]int64{}
	for _, ch := range channelTable() {
		if ch.mediaMaxMb == nil {
			continue
		}
		for _, id := range ch.accounts(cfg) {
			caps[channels.AccountKey{Channel: ch.name, AccountID: id}] = channels.MediaMaxBytes(ch.mediaMaxMb(cfg, id))
		}
	}
	m := dispatch.Media{
		MaxBytes:     func(k channels.AccountKey) int64 { return caps[k] },
		MaxTextBytes: cfg.Media.MaxTextKB << 10,
	}
	audio := cfg.Media.Audio
	if audio.Provider == "" {
		return m, nil
	}
	p, err := openai.New(openai.Config{Name: audio.Provider, Provider: cfg.Providers[audio.Provider], Logger: log})
	if err != nil {
		return m, err
	}
	m.Transcribe = func(ctx context.Context, r io.Reader, name string) (string, error) {
		return p.Transcribe(ctx, audio.Model, r, name)
	}
	return m, nil
}
