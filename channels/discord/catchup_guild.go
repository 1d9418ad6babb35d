package discord

import (
	"context"
	"math/big"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Catching up on channels without a usable cursor. The catch-up after a
// connect (catchup.go) reads the channels the adapter heard before; a
// thread or forum post opened while no process was connected has no
// cursor, nor does a channel nothing was said in before, and a channel
// quiet for longer than CatchUpMaxAge is not read. A new session's
// GUILD_CREATE names each channel and active thread of its guild with the
// id of its newest message: those newer than what the adapter heard (the
// channel's cursor, else the newest message the account heard anywhere,
// less a minute for clock skew) are read from there like any channel, within
// CatchUpMaxAge and, together with the catch-up's own channels,
// CatchUpMaxChannels. A guild the bot joins while connected is not read:
// what was said there before is not addressed to it.

// skewMargin is how far before the newest message heard anywhere a
// channel without a cursor is read from: the host's clock and Discord's
// may differ.
const skewMargin = time.Minute

// discordEpoch is the first millisecond of 2015 (Unix ms), where
// snowflakes count from.
const discordEpoch = 1420070400000

// guildStart is a GUILD_CREATE of a guild READY announced (a new session),
// queued for Run's goroutine.
type guildStart struct{ id string }

// catchUpPlan is what the catch-up after a connect leaves for its
// guilds' GUILD_CREATE; Run's goroutine only.
type catchUpPlan struct {
	heard  time.Time         // the newest cursor's time (zero: none)
	stored map[string]cursor // the stored cursors read at the connect
	budget int               // channels still to be read this connect
	warned bool              // the budget's warning was logged
}

// startGuilds records the guilds a READY announced: their GUILD_CREATE
// brings the channels to catch up on.
func (a *Adapter) startGuilds(r *discordgo.Ready) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starting = map[string]bool{}
	for _, g := range r.Guilds {
		if g != nil {
			a.starting[g.ID] = true
		}
	}
}

// takeStartGuild reports whether id is a guild READY announced whose
// GUILD_CREATE was not taken yet.
func (a *Adapter) takeStartGuild(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.starting[id] {
		return false
	}
	delete(a.starting, id)
	return true
}

// readable reports channel types whose history holds messages.
func readable(t discordgo.ChannelType) bool {
	switch t {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews, discordgo.ChannelTypeGuildVoice,
		discordgo.ChannelTypeGuildStageVoice, discordgo.ChannelTypeGuildNewsThread,
		discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread:
		return true
	}
	return false
}

// catchUpGuild reads the channels of guild id (its GUILD_CREATE just
// arrived) that have messages newer than the adapter heard there (Run's
// goroutine).
func (a *Adapter) catchUpGuild(ctx context.Context, h channels.Handler, id string) {
	p := &a.plan
	if a.opts.Cursors == nil || p.heard.IsZero() {
		return
	}
	g, err := a.s.State.Guild(id)
	if err != nil {
		return
	}
	type latest struct{ id, last string }
	var chs []latest
	a.s.State.RLock()
	for _, list := range [][]*discordgo.Channel{g.Channels, g.Threads} {
		for _, c := range list {
			if c != nil && c.LastMessageID != "" && readable(c.Type) {
				chs = append(chs, latest{c.ID, c.LastMessageID})
			}
		}
	}
	a.s.State.RUnlock()
	cutoff := time.Now().Add(-a.catchUpMaxAge())
	since := p.heard.Add(-skewMargin)
	total, read := 0, 0
	for _, c := range chs {
		from, floor := "", since
		if cur, ok := a.seen.get(c.id); ok {
			from, floor = cur.id, cutoff
		} else if cur, ok := p.stored[c.id]; ok {
			from, floor = cur.id, cutoff
		}
		if floor.Before(cutoff) {
			floor = cutoff
		}
		if at := snowflakeAt(floor); snowflakeCmp(at, from) > 0 {
			from = at
		}
		if snowflakeCmp(c.last, from) <= 0 || ctx.Err() != nil {
			continue
		}
		if !a.canRead(ctx, id, c.id) {
			continue
		}
		if p.budget <= 0 {
			if !p.warned {
				p.warned = true
				a.log.Warn("catch-up limited to the most recently active channels", zap.String("guild_id", id),
					zap.Int("max_channels", a.catchUpMaxChannels()))
			}
			return
		}
		p.budget--
		read++
		total += a.catchUpChannel(ctx, h, c.id, from, cutoff)
	}
	if total > 0 {
		a.log.Info("caught up on channels new or quiet before the disconnect", zap.String("guild_id", id),
			zap.Int("messages", total), zap.Int("channels", read))
	}
}

// historyPermissions let the bot read a channel's history.
const historyPermissions = discordgo.PermissionViewChannel | discordgo.PermissionReadMessageHistory

// canRead reports whether the bot may read channel's history, by its
// permissions there as the gateway's state has them (GUILD_CREATE names
// every channel, also those hidden from the bot: asking for those would
// only be refused).
func (a *Adapter) canRead(ctx context.Context, guild, channel string) bool {
	bot := a.bot()
	if bot == "" {
		return false
	}
	perms, err := a.channelPermissions(ctx, guild, channel, bot)
	if err != nil {
		a.log.Debug("catch-up: permissions unknown; channel read all the same", zap.String("chat_id", channel), zap.Error(err))
		return true
	}
	return perms&historyPermissions == historyPermissions
}

// snowflakeAt is the smallest snowflake of time t's millisecond, less one:
// reading "after" it reads what was said from t on.
func snowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - discordEpoch
	if ms <= 0 {
		return "0"
	}
	return before(new(big.Int).Lsh(big.NewInt(ms), 22).String())
}
