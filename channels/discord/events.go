package discord

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Reactions and edits (issue 23). MESSAGE_REACTION_ADD is read from the
// raw event, whose message_author_id (not in discordgo v0.29's struct)
// tells a reaction to the bot's own message; MESSAGE_UPDATE with an
// edited_timestamp is an edit (an update without one only added an embed).
// Both become Inbound events; the dispatcher decides by the room's
// settings (reactions, edits: off by default) what becomes of them.
// Removals of reactions are not heard.

// reactionAdd is the MESSAGE_REACTION_ADD payload.
type reactionAdd struct {
	UserID          string            `json:"user_id"`
	ChannelID       string            `json:"channel_id"`
	MessageID       string            `json:"message_id"`
	GuildID         string            `json:"guild_id,omitempty"`
	MessageAuthorID string            `json:"message_author_id,omitempty"`
	Member          *discordgo.Member `json:"member,omitempty"`
	Emoji           discordgo.Emoji   `json:"emoji"`
}

// onRawEvent queues the reactions discordgo hands over only as raw events.
func (a *Adapter) onRawEvent(q *queue) func(*discordgo.Session, *discordgo.Event) {
	return func(_ *discordgo.Session, e *discordgo.Event) {
		if e.Type != "MESSAGE_REACTION_ADD" {
			return
		}
		var r reactionAdd
		if err := json.Unmarshal(e.RawData, &r); err != nil {
			a.log.Warn("reaction event unreadable", zap.Error(err))
			return
		}
		if !q.push(&r) {
			a.log.Warn("inbound queue full, reaction dropped", zap.String("message_id", r.MessageID))
		}
	}
}

// handleQueued hands one queued gateway event to h.
func (a *Adapter) handleQueued(ctx context.Context, h channels.Handler, it any) {
	switch x := it.(type) {
	case *discordgo.MessageCreate:
		_ = a.handle(ctx, h, x) // a message held is read again (held.go)
	case *discordgo.MessageUpdate:
		if in, ok := a.edit(ctx, x); ok {
			_ = a.deliver(ctx, h, in) // not caught up: given up when not taken
		}
	case *guildStart:
		a.catchUpGuild(ctx, h, x.id) // catchup_guild.go
	case *reactionAdd:
		if in, ok := a.reaction(ctx, x); ok {
			_ = a.deliver(ctx, h, in) // not caught up: given up when not taken
		}
	}
}

// edit turns a MESSAGE_UPDATE that edited a user's text into an event.
func (a *Adapter) edit(ctx context.Context, m *discordgo.MessageUpdate) (channels.Inbound, bool) {
	if m.Message == nil || m.EditedTimestamp == nil || m.Author == nil {
		return channels.Inbound{}, false
	}
	in, ok, unplaced := a.inboundOf(ctx, m.Message, true)
	if !ok || unplaced {
		return in, false
	}
	in.Event = &channels.Event{Kind: channels.EventEdit, Stamp: strconv.FormatInt(m.EditedTimestamp.UnixMilli(), 10)}
	return in, true
}

// reaction turns a reaction added to one of the bot's messages into an
// event, from the user who reacted.
func (a *Adapter) reaction(ctx context.Context, r *reactionAdd) (channels.Inbound, bool) {
	bot := a.bot()
	if bot == "" || r.UserID == "" || r.UserID == bot || r.MessageAuthorID != bot {
		return channels.Inbound{}, false
	}
	if r.Member != nil && r.Member.User != nil && r.Member.User.Bot {
		return channels.Inbound{}, false
	}
	emoji := r.Emoji.Name
	if r.Emoji.ID != "" {
		emoji = ":" + r.Emoji.Name + ":"
	}
	in := channels.Inbound{
		Address:   channels.Address{Channel: Name, AccountID: a.id, ChatID: r.ChannelID},
		MessageID: r.MessageID, SenderID: r.UserID, SenderName: r.UserID, CaseSensitive: true, Mentioned: true,
		Event: &channels.Event{Kind: channels.EventReaction, Emoji: emoji, Stamp: r.UserID + "/" + emoji},
	}
	if r.Member != nil {
		switch {
		case r.Member.Nick != "":
			in.SenderName = r.Member.Nick
		case r.Member.User != nil && r.Member.User.GlobalName != "":
			in.SenderName = r.Member.User.GlobalName
		case r.Member.User != nil:
			in.SenderName = r.Member.User.Username
		}
	}
	if r.GuildID == "" {
		in.ChatType = channels.Direct
		return in, true
	}
	in.ChatType, in.GuildID = channels.Channel, r.GuildID
	if !a.place(ctx, &in, r.ChannelID) {
		return channels.Inbound{}, false // not caught up: given up (place)
	}
	return in, true
}

// BotName implements channels.Namer: the bot user's name from READY.
func (a *Adapter) BotName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botName
}
