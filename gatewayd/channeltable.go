package gatewayd

import (
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
)

// channelRow is what the daemon knows about one channel: its accounts in
// the config, how an account's adapter is built, the account's access
// rules and media cap, what a hot reload applies and what it leaves for a
// restart. assemble, runtime and reload read the rows and know no channel
// by name; adding a channel is adding a row to channelTable.
type channelRow struct {
	// name is the channel's name (channels.Adapter.Name, routing keys).
	name string
	// accounts lists the account ids cfg configures for the channel, sorted.
	accounts func(cfg *configs.Config) []string
	// build makes one account's adapter.
	build func(d *Daemon, cfg *configs.Config, account string) (channels.Adapter, error)
	// access is an account's access rules, from which the access policy is
	// built. Nil: the channel is reached only through the HTTP API (token
	// protected when public), every sender is allowed and privileged, and
	// it has no room settings.
	access func(cfg *configs.Config, account string) access.Config
	// mediaMaxMb is an account's download cap setting (hot: the
	// dispatcher applies it); nil leaves the dispatcher's default.
	mediaMaxMb func(cfg *configs.Config, account string) int
	// restartOnly names the accounts added, removed or changed between two
	// configs beyond what hot reload applies; nil: the channel's settings
	// live in a section restartOnly compares whole (web: http).
	restartOnly func(old, cfg *configs.Config) []string
	// reload hands a running adapter of the channel what it applies
	// itself after a reload; nil: nothing.
	reload func(a channels.Adapter, old, cfg *configs.Config)
	// leaderRole is the leader role an adapter needs to run on a backend
	// several replicas share; nil or false: none.
	leaderRole func(a channels.Adapter) (role string, ok bool)
	// webhook is the handler an adapter serves on the HTTP API's
	// listener, if any; nil or false: none.
	webhook func(a channels.Adapter) (path string, h http.Handler, ok bool)
}

// channelTable is the channel table: one row per channel, in the order
// their adapters are built and registered.
func channelTable() []channelRow {
	return []channelRow{webRow(), telegramRow(), discordRow()}
}

// channelOf is the row of the channel named name, or nil.
func channelOf(name string) *channelRow {
	for _, r := range channelTable() {
		if r.name == name {
			return &r
		}
	}
	return nil
}

// PairingChannels names the channels whose senders pair (those with
// access rules: dmPolicy pairing admits their unknown DM senders), in
// table order: what `gateway pairing` takes as CHANNEL.
func PairingChannels() []string {
	var out []string
	for _, r := range channelTable() {
		if r.access != nil {
			out = append(out, r.name)
		}
	}
	return out
}

// openChannels are the channels without access rules (channelRow.access).
func openChannels() map[string]bool {
	open := map[string]bool{}
	for _, r := range channelTable() {
		if r.access == nil {
			open[r.name] = true
		}
	}
	return open
}

// buildAdapters builds every configured account's adapter, channel by
// channel in table order.
func (d *Daemon) buildAdapters(cfg *configs.Config) error {
	for _, ch := range channelTable() {
		for _, id := range ch.accounts(cfg) {
			a, err := ch.build(d, cfg, id)
			if err != nil {
				return fmt.Errorf("gateway: channels.%s.accounts.%s: %w", ch.name, id, err)
			}
			d.adapters = append(d.adapters, a)
		}
	}
	return nil
}

// webRow is the web chat: one account, served by the HTTP API when
// http.web is on.
func webRow() channelRow {
	return channelRow{
		name: web.Name,
		accounts: func(cfg *configs.Config) []string {
			if !cfg.HTTP.Web {
				return nil
			}
			return []string{"default"}
		},
		build: func(d *Daemon, cfg *configs.Config, _ string) (channels.Adapter, error) {
			id, err := webIdentity(cfg)
			if err != nil {
				return nil, err
			}
			return web.New(web.Options{Logger: d.log.Named("web"), Lookup: d.lookupWebPeer, TurnOf: d.disp.TurnOf,
				Identity: id, Choices: d.choices, Now: d.opts.Now}), nil
		},
		restartOnly: func(old, cfg *configs.Config) []string {
			if old.Channels.Web != cfg.Channels.Web {
				return []string{"channels.web"}
			}
			return nil
		},
	}
}

// telegramRow is channels.telegram.
func telegramRow() channelRow {
	accts := func(cfg *configs.Config) map[string]configs.TelegramAccount { return cfg.Channels.Telegram.Accounts }
	// hot clears what hot reload applies: the account's rules, access lists
	// and room settings (the policy), and the media cap (dispatch.Media).
	hot := func(c configs.TelegramAccount) configs.TelegramAccount {
		c.Rules = access.Config{}
		c.MediaMaxMb = 0
		return c
	}
	return channelRow{
		name:     telegram.Name,
		accounts: func(cfg *configs.Config) []string { return slices.Sorted(maps.Keys(accts(cfg))) },
		build: func(d *Daemon, cfg *configs.Config, id string) (channels.Adapter, error) {
			log := d.log.Named("telegram")
			return telegram.New(id, accts(cfg)[id].Config, telegram.Options{
				Logger:          log,
				HTTPClient:      d.opts.HTTPClient,
				OffsetStore:     newTelegramCursors(d.backend.Cursors(), filepath.Join(cfg.StateDir, "telegram"), log),
				MentionRequired: d.dropUnmentioned,
				Choices:         d.choices,
				// The menu offers /new and /reset only while they are
				// reset triggers.
				Commands: dispatch.CommandsFor(cfg.Session.ResetConfig()),
			})
		},
		access:     func(cfg *configs.Config, id string) access.Config { return accts(cfg)[id].Access() },
		mediaMaxMb: func(cfg *configs.Config, id string) int { return accts(cfg)[id].MediaMaxMb },
		restartOnly: func(old, cfg *configs.Config) []string {
			return changedAccounts("channels.telegram.accounts", accts(old), accts(cfg), hot)
		},
		// The menus follow the reset triggers: republished when the
		// catalogue changed.
		reload: func(a channels.Adapter, old, cfg *configs.Config) {
			if tg, ok := a.(*telegram.Adapter); ok {
				if cmds, changed := commandsChanged(old, cfg); changed {
					tg.SetCommands(cmds)
				}
			}
		},
		// One poller per bot: a second one gets 409 Conflict. A webhook
		// is served by whichever replica Telegram reaches.
		leaderRole: func(a channels.Adapter) (string, bool) {
			tg, ok := a.(*telegram.Adapter)
			if !ok || tg.Config().Mode == telegram.ModeWebhook {
				return "", false
			}
			return "telegram:" + tg.AccountID(), true
		},
		// A webhook without a listener of its own shares the API's.
		webhook: func(a channels.Adapter) (string, http.Handler, bool) {
			tg, ok := a.(*telegram.Adapter)
			if !ok || tg.Config().Mode != telegram.ModeWebhook || tg.Config().Webhook.Listen != "" {
				return "", nil, false
			}
			return tg.WebhookPath(), tg.WebhookHandler(), true
		},
	}
}

// discordRow is channels.discord.
func discordRow() channelRow {
	accts := func(cfg *configs.Config) map[string]configs.DiscordAccount { return cfg.Channels.Discord.Accounts }
	acc := func(cfg *configs.Config, id string) access.Config { return accts(cfg)[id].Access() }
	hot := func(c configs.DiscordAccount) configs.DiscordAccount {
		c.Rules = configs.DiscordRules{}
		c.MediaMaxMb = 0
		return c
	}
	return channelRow{
		name:     discord.Name,
		accounts: func(cfg *configs.Config) []string { return slices.Sorted(maps.Keys(accts(cfg))) },
		build: func(d *Daemon, cfg *configs.Config, id string) (channels.Adapter, error) {
			return discord.New(id, accts(cfg)[id].Config, discord.Options{Logger: d.log.Named("discord"), HTTPClient: d.opts.HTTPClient,
				// Mention gating, rooms and slash commands follow the
				// hot-reloaded access policy.
				MentionRequired: d.dropUnmentioned,
				Room:            func(in channels.Inbound) channels.Room { return d.policy.Load().Room(in) },
				SlashAllowed:    d.slashAllowed,
				// What was said while the bot was down is caught up from
				// the channels' history at each connect (catchup.go).
				Cursors: d.backend.Cursors(), Choices: d.choices,
				// The slash commands offer /new and /reset only while they
				// are reset triggers.
				Commands: dispatch.CommandsFor(cfg.Session.ResetConfig())})
		},
		access:     acc,
		mediaMaxMb: func(cfg *configs.Config, id string) int { return accts(cfg)[id].MediaMaxMb },
		restartOnly: func(old, cfg *configs.Config) []string {
			return changedAccounts("channels.discord.accounts", accts(old), accts(cfg), hot)
		},
		// The account's access rules choose, through the new policy the
		// adapter's SlashAllowed reads, the guilds its slash commands are
		// registered in: a guild added gets them now, not at the next
		// start. A removed account needs a restart (restartOnly says so).
		reload: func(a channels.Adapter, old, cfg *configs.Config) {
			da, ok := a.(*discord.Adapter)
			if !ok {
				return
			}
			// The slash commands follow the reset triggers.
			if cmds, changed := commandsChanged(old, cfg); changed {
				da.SetCommands(cmds)
			}
			id := da.AccountID()
			if _, ok := accts(cfg)[id]; !ok {
				return
			}
			if _, ok := accts(old)[id]; ok && reflect.DeepEqual(acc(old, id), acc(cfg, id)) {
				return
			}
			da.ResyncSlash()
		},
		// One gateway connection per bot: a second one would receive
		// every event twice.
		leaderRole: func(a channels.Adapter) (string, bool) {
			if _, ok := a.(*discord.Adapter); !ok {
				return "", false
			}
			return "discord:" + a.AccountID(), true
		},
	}
}

// commandsChanged is the command catalogue cfg leaves and whether it
// differs from old's (session.resetTriggers reloaded), so that menus are
// published again only when they change.
func commandsChanged(old, cfg *configs.Config) ([]channels.Command, bool) {
	cmds := dispatch.CommandsFor(cfg.Session.ResetConfig())
	return cmds, !reflect.DeepEqual(dispatch.CommandsFor(old.Session.ResetConfig()), cmds)
}
