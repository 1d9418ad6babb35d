package discord

import (
	"context"
	"fmt"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

var _ channels.AdminChecker = (*Adapter)(nil)

// adminPermissions make a member an administrator of a channel: any one of
// them (the guild's owner holds them all).
const adminPermissions = discordgo.PermissionAdministrator | discordgo.PermissionManageGuild |
	discordgo.PermissionManageChannels

// IsAdmin implements channels.AdminChecker: the sender administers the
// channel (a thread's parent) when their permissions there, after the
// channel's overwrites, include Administrator, Manage Server or Manage
// Channels, or when they own the guild. A slash command brings the
// member's permissions with it (adminFromInteraction); otherwise they are
// computed from the channel, the guild (owner, roles) and the member's
// roles, each from the gateway's state or else over REST. Answers are
// cached per channel and user for channels.AdminTTL.
func (a *Adapter) IsAdmin(ctx context.Context, in channels.Inbound) (bool, error) {
	if in.ChatType == channels.Direct || in.GuildID == "" || in.SenderID == "" {
		return false, nil
	}
	room := adminRoom(in)
	if admin, ok := a.admins.Get(room, in.SenderID); ok {
		return admin, nil
	}
	perms, err := a.channelPermissions(ctx, in.GuildID, room, in.SenderID)
	if err != nil {
		return false, fmt.Errorf("discord: channel permissions: %w", err)
	}
	admin := perms&adminPermissions != 0
	a.admins.Put(room, in.SenderID, admin)
	return admin, nil
}

// adminFromInteraction caches what a slash command says of its member: the
// interaction carries their permissions in the channel, so IsAdmin needs
// no request for it. Discord always sends them; none (0) are left unsaid.
func (a *Adapter) adminFromInteraction(i *discordgo.Interaction, in channels.Inbound) {
	if i.Member == nil || i.Member.Permissions == 0 || in.GuildID == "" {
		return
	}
	a.admins.Put(adminRoom(in), in.SenderID, i.Member.Permissions&adminPermissions != 0)
}

// adminRoom is the channel whose permissions decide: a thread's parent.
func adminRoom(in channels.Inbound) string {
	if in.ParentChatID != "" {
		return in.ParentChatID
	}
	return in.ChatID
}

// permView is what channelPermissions needs of a guild, a channel and a
// member: copies, never the state's own values (the gateway's goroutine
// updates those in place).
type permView struct {
	guildID, ownerID string
	roles            []discordgo.Role
	overwrites       []discordgo.PermissionOverwrite
	memberRoles      []string
}

// channelPermissions computes userID's permissions in channel channelID of
// guild guildID (a thread's parent's). discordgo's own helper trusts any
// guild in the state, also the unavailable stub READY leaves until
// GUILD_CREATE arrives (no owner, no roles), and reads the state unlocked:
// here a guild is taken from the state only once it has its roles, and
// every value is copied under the state's lock.
func (a *Adapter) channelPermissions(ctx context.Context, guildID, channelID, userID string) (int64, error) {
	opt := discordgo.WithContext(ctx)
	var v permView
	ch, err := a.s.State.Channel(channelID)
	if err != nil {
		if ch, err = a.s.Channel(channelID, opt); err != nil {
			return 0, err
		}
	}
	a.s.State.RLock()
	parent, chGuild := "", ch.GuildID
	if ch.IsThread() {
		parent = ch.ParentID
	}
	for _, o := range ch.PermissionOverwrites {
		v.overwrites = append(v.overwrites, *o)
	}
	a.s.State.RUnlock()
	switch {
	case parent != "":
		return a.channelPermissions(ctx, guildID, parent, userID)
	case chGuild != "" && chGuild != guildID:
		return 0, fmt.Errorf("channel %s is not in guild %s", channelID, guildID)
	}
	g, err := a.s.State.Guild(guildID)
	if err == nil {
		a.s.State.RLock()
		if !g.Unavailable && len(g.Roles) > 0 {
			v.guildID, v.ownerID, v.roles = g.ID, g.OwnerID, copyRoles(g.Roles)
		}
		a.s.State.RUnlock()
	}
	if v.guildID == "" {
		if g, err = a.s.Guild(guildID, opt); err != nil {
			return 0, err
		}
		v.guildID, v.ownerID, v.roles = g.ID, g.OwnerID, copyRoles(g.Roles)
	}
	if userID == v.ownerID {
		return discordgo.PermissionAll, nil
	}
	m, err := a.s.State.Member(guildID, userID)
	if err == nil {
		a.s.State.RLock()
		v.memberRoles = slices.Clone(m.Roles)
		a.s.State.RUnlock()
	} else if m, err = a.s.GuildMember(guildID, userID, opt); err == nil {
		v.memberRoles = m.Roles
	} else {
		return 0, err
	}
	return v.permissions(userID), nil
}

func copyRoles(rs []*discordgo.Role) []discordgo.Role {
	out := make([]discordgo.Role, 0, len(rs))
	for _, r := range rs {
		out = append(out, *r)
	}
	return out
}

// permissions is Discord's permission hierarchy for a member who does not
// own the guild: the @everyone role and the member's roles; Administrator
// grants everything, overwrites notwithstanding; otherwise the channel's
// overwrites apply in order: @everyone, the member's roles (denies, then
// allows), the member.
func (v permView) permissions(userID string) int64 {
	var p int64
	for _, r := range v.roles {
		if r.ID == v.guildID || slices.Contains(v.memberRoles, r.ID) {
			p |= r.Permissions
		}
	}
	if p&discordgo.PermissionAdministrator != 0 {
		return discordgo.PermissionAll
	}
	var everyone, member *discordgo.PermissionOverwrite
	var deny, allow int64
	for i, o := range v.overwrites {
		switch {
		case o.Type == discordgo.PermissionOverwriteTypeRole && o.ID == v.guildID:
			everyone = &v.overwrites[i]
		case o.Type == discordgo.PermissionOverwriteTypeRole && slices.Contains(v.memberRoles, o.ID):
			deny, allow = deny|o.Deny, allow|o.Allow
		case o.Type == discordgo.PermissionOverwriteTypeMember && o.ID == userID:
			member = &v.overwrites[i]
		}
	}
	if everyone != nil {
		p = p&^everyone.Deny | everyone.Allow
	}
	p = p&^deny | allow
	if member != nil {
		p = p&^member.Deny | member.Allow
	}
	return p
}
