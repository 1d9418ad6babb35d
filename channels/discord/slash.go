package discord

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Where an account registers the command catalogue as slash commands
// (Config.SlashCommands).
const (
	// SlashGuild registers them in each guild the bot is in that the
	// account's guilds configure (every guild under groupPolicy open);
	// they appear at once. The default.
	SlashGuild = "guild"
	// SlashGlobal registers them once for the application: every guild and
	// DMs (Discord may take a while to show changes).
	SlashGlobal = "global"
	// SlashOff registers nothing (commands registered earlier stay).
	SlashOff = "off"
)

// slashMode is c.SlashCommands with its default.
func (c Config) slashMode() string {
	if c.SlashCommands == "" {
		return SlashGuild
	}
	return c.SlashCommands
}

// commands is the catalogue this adapter registers and accepts.
func (a *Adapter) commands() []channels.Command {
	return *a.catalogue.Load()
}

// SetCommands replaces the command catalogue (a hot reload changed the
// reset triggers): interactions are judged by it at once, and while Run
// runs it is registered again, in the background, everywhere this Run
// registered the old one. Safe for concurrent use; it does not block.
func (a *Adapter) SetCommands(cmds []channels.Command) {
	cmds = append([]channels.Command(nil), cmds...)
	a.catalogue.Store(&cmds)
	select {
	case a.recommand <- struct{}{}:
	default: // a registration is pending; it reads the newest catalogue
	}
}

// reregister registers the catalogue in force again in every scope this
// Run registered (SetCommands); a failure leaves the scope to be tried at
// the next reload or reconnect.
func (a *Adapter) reregister(ctx context.Context, registered map[string]bool) {
	appID := a.ix.app()
	for id, ok := range registered {
		if ok && (id == "" || a.slashGuildNow(id)) {
			registered[id] = a.register(ctx, appID, id)
		}
	}
}

// command finds name in the adapter's catalogue.
func (a *Adapter) command(name string) (channels.Command, bool) {
	for _, c := range a.commands() {
		if c.Name == name {
			return c, true
		}
	}
	return channels.Command{}, false
}

// applicationCommands turns the catalogue into slash commands: one
// optional (or required) free-text option for commands with arguments.
func applicationCommands(cmds []channels.Command) []*discordgo.ApplicationCommand {
	out := make([]*discordgo.ApplicationCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := &discordgo.ApplicationCommand{Type: discordgo.ChatApplicationCommand, Name: c.Name, Description: c.Description}
		if c.Arg != "" {
			ac.Options = []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString,
				Name: c.Arg, Description: c.ArgDescription, Required: c.ArgRequired}}
		}
		out = append(out, ac)
	}
	return out
}

// slashGuild reports whether the access rules in force
// (Options.SlashAllowed) admit guild g or one of its channels or threads,
// so that its commands are registered there. The rules decide, so every
// form they know (a guild, channel or thread key, "*", enabled/allow,
// groupPolicy) counts as it does for messages.
func (a *Adapter) slashGuild(g *discordgo.Guild) bool {
	allowed := a.opts.SlashAllowed
	if a.cfg.slashMode() != SlashGuild || allowed == nil || g == nil || g.Unavailable {
		return false
	}
	admits := func(chat, thread string) bool {
		in := channels.Inbound{Address: channels.Address{Channel: Name, AccountID: a.id, ChatID: chat, ThreadID: thread},
			ChatType: channels.Channel, GuildID: g.ID, CaseSensitive: true, Mentioned: true}
		if thread != "" {
			in.ParentChatID = chat
		}
		return allowed(in)
	}
	if admits(g.ID, "") {
		return true
	}
	for _, c := range g.Channels {
		if c != nil && admits(c.ID, "") {
			return true
		}
	}
	for _, c := range g.Threads {
		if c != nil && admits(c.ParentID, c.ID) {
			return true
		}
	}
	return false
}

// ResyncSlash says that the rules behind Options.SlashAllowed changed (the
// account's guilds or groupPolicy, hot-reloaded). While Run runs, in guild
// mode, a guild they now admit gets the catalogue and a guild that got it
// from this Run but is no longer admitted has its commands removed, in the
// background, best-effort and logged. ResyncSlash is safe for concurrent
// use and does not block.
func (a *Adapter) ResyncSlash() {
	select {
	case a.resync <- struct{}{}:
	default: // a resync is pending; it reads the newest configuration
	}
}

// slashGuildNow reports whether guild id, as the gateway's state knows it,
// is admitted under the configuration in force; a guild the state does not
// hold is judged admitted (GUILD_CREATE found it so a moment ago).
func (a *Adapter) slashGuildNow(id string) bool {
	a.s.State.RLock()
	defer a.s.State.RUnlock()
	for _, g := range a.s.State.Guilds {
		if g != nil && g.ID == id {
			return a.slashGuild(g)
		}
	}
	return true
}

// slashGuildCreated judges the guild a GUILD_CREATE announced as the
// gateway's state holds it, under the state's lock (issue 22 item 11): the
// state keeps the event's own struct for a guild it did not know and
// copies it into its own otherwise, and the inbound path caches channels
// it looked up over REST into that struct while this runs. Without a state
// entry (none is kept) the event's guild is judged.
func (a *Adapter) slashGuildCreated(g *discordgo.Guild) bool {
	if g == nil {
		return false
	}
	a.s.State.RLock()
	defer a.s.State.RUnlock()
	for _, sg := range a.s.State.Guilds {
		if sg != nil && sg.ID == g.ID {
			return a.slashGuild(sg)
		}
	}
	return a.slashGuild(g)
}

// slashGuildsNow maps every available guild of the gateway's state to
// whether it is admitted under the configuration in force. The state's lock
// is held while its guilds are read: discordgo updates them in place.
func (a *Adapter) slashGuildsNow() map[string]bool {
	a.s.State.RLock()
	defer a.s.State.RUnlock()
	out := make(map[string]bool, len(a.s.State.Guilds))
	for _, g := range a.s.State.Guilds {
		if g != nil && !g.Unavailable {
			out[g.ID] = a.slashGuild(g)
		}
	}
	return out
}

// resyncGuilds brings registrations in line with the rules in force after
// ResyncSlash: the catalogue for admitted guilds not yet
// registered, nothing for guilds that no longer are. registered is the
// registration worker's record of this Run's guild registrations.
func (a *Adapter) resyncGuilds(ctx context.Context, registered map[string]bool) {
	if a.cfg.slashMode() != SlashGuild {
		return
	}
	appID := a.ix.app()
	for id, ok := range a.slashGuildsNow() {
		switch {
		case ok && !registered[id]:
			registered[id] = a.register(ctx, appID, id)
		case !ok && registered[id]:
			if a.unregister(ctx, appID, id) {
				delete(registered, id)
			}
		}
	}
}

// register overwrites the application's commands in guildID ("" for
// global) with the catalogue and reports whether that was done. Failures
// are logged: typed commands keep working without the menu.
func (a *Adapter) register(ctx context.Context, appID, guildID string) bool {
	return a.overwrite(ctx, appID, guildID, applicationCommands(a.commands()))
}

// unregister removes the application's commands from guildID (a guild a
// reload no longer admits) and reports whether that was done.
func (a *Adapter) unregister(ctx context.Context, appID, guildID string) bool {
	return a.overwrite(ctx, appID, guildID, []*discordgo.ApplicationCommand{})
}

// overwrite replaces the application's commands in guildID ("" for global)
// with cmds, logging the outcome.
func (a *Adapter) overwrite(ctx context.Context, appID, guildID string, cmds []*discordgo.ApplicationCommand) bool {
	if appID == "" {
		a.log.Warn("slash commands not registered: no application id", zap.String("guild_id", guildID))
		return false
	}
	_, err := a.s.ApplicationCommandBulkOverwrite(appID, guildID, cmds, discordgo.WithContext(ctx))
	scope := guildID
	if scope == "" {
		scope = "global"
	}
	switch {
	case err != nil && ctx.Err() == nil:
		a.log.Warn("slash commands not updated", zap.String("scope", scope), zap.Int("commands", len(cmds)), zap.Error(err))
	case err == nil && len(cmds) == 0:
		a.log.Info("slash commands removed", zap.String("scope", scope))
	case err == nil:
		a.log.Info("slash commands registered", zap.String("scope", scope), zap.Int("commands", len(cmds)))
	}
	return err == nil
}

// commandText is the chat command an interaction stands for: "/name" and
// its option values, as a person would type it.
func commandText(name string, opts []*discordgo.ApplicationCommandInteractionDataOption) string {
	parts := []string{"/" + name}
	for _, o := range opts {
		if o == nil || o.Value == nil {
			continue
		}
		var v string
		switch x := o.Value.(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			v = fmt.Sprint(x)
		}
		if v = strings.TrimSpace(v); v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}
