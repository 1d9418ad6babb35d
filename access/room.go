package access

import (
	"slices"

	"github.com/gateway/gateway/channels"
)

// Room resolves how the bot behaves in the room in came from: the
// channel's defaults, then the account's (Config.Room), then every
// matching rule from the least specific ("*", guild, parent channel,
// group) to the most specific (channel, thread, topic). RequireMention
// and Enabled follow the same rules Check applies. A DM gets the
// account's defaults with no mention gate.
func (p *Policy) Room(in channels.Inbound) channels.Room {
	c := p.account(in)
	r := c.cfg.Room.Apply(channels.DefaultRoom(in.Channel))
	r.InheritParent = c.cfg.InheritParent
	if in.ChatType == channels.Direct {
		r.RequireMention = false
		return r
	}
	g := c.group(in)
	r.RequireMention, r.Enabled = g.requireMention, g.allow
	if c.cfg.GroupPolicy == GroupDisabled || (c.cfg.GroupPolicy == GroupAllowlist && !g.matched) {
		r.Enabled = false
	}
	keys := groupKeys(in)
	slices.Reverse(keys)
	for _, k := range keys {
		if cr, ok := c.groups[k]; ok {
			r = cr.rule.RoomConfig.Apply(r)
			r.Configured = true
		}
	}
	return r
}
