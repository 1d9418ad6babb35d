package telegram

import (
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/gateway/gateway/channels"
)

// Reactions and edits (issue 23). Telegram sends message_reaction updates
// only when they are in allowed_updates, and in groups only to a bot that
// is an administrator; the update names neither the message's author nor
// its topic, so the adapter keeps where its own messages went (sent) and
// hears a reaction only to one of them. An edited_message update is
// normalised like the message and marked as an edit; the dispatcher
// decides by the room's settings (reactions, edits: off by default) what
// becomes of either.

// Drop reasons of events.
const (
	dropReactionRemoved = "reaction_removed"
	dropReactionNotBot  = "reaction_not_to_bot"
	dropReactionAnon    = "reaction_anonymous"
)

// messageReaction is Bot API MessageReactionUpdated (not in
// telegram-bot-api v5.5.1).
type messageReaction struct {
	Chat        *chat          `json:"chat"`
	MessageID   int            `json:"message_id"`
	User        *tgbotapi.User `json:"user,omitempty"`
	ActorChat   *tgbotapi.Chat `json:"actor_chat,omitempty"`
	Date        int            `json:"date"`
	OldReaction []reactionKind `json:"old_reaction"`
	NewReaction []reactionKind `json:"new_reaction"`
}

// reactionKind is Bot API ReactionType: emoji, custom_emoji or paid.
type reactionKind struct {
	Type          string `json:"type"`
	Emoji         string `json:"emoji,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

func (r reactionKind) name() string {
	switch r.Type {
	case "emoji":
		return r.Emoji
	case "custom_emoji":
		return "custom_emoji:" + r.CustomEmojiID
	}
	return r.Type
}

// BotName implements channels.Namer: the bot's first name from getMe.
func (a *Adapter) BotName() string {
	if s := a.self.Load(); s != nil {
		return s.FirstName
	}
	return ""
}

// noteSent records in the sent log that message id went to params' chat,
// with out's address (addr) in that chat: a group's reply that followed
// it into the supergroup it became lives there, where a reaction to it
// comes from and where the group's session moved.
func (a *Adapter) noteSent(params tgbotapi.Params, id string, addr channels.Address) {
	addr.ChatID = params["chat_id"]
	a.sent.Add(params["chat_id"], id, addr)
}

// edited normalises an edited message like a new one, marked as an edit.
// Its stamp is the edit's date and its update's id: the date alone is in
// whole seconds, so two edits within one second shared it (the second a
// duplicate to the dispatcher), while a redelivery keeps its update id.
func (a *Adapter) edited(u *update) (channels.Inbound, string) {
	m := u.EditedMessage
	cp := update{UpdateID: u.UpdateID, Message: m}
	in, reason := a.normalise(&cp)
	if reason != "" {
		return in, reason
	}
	in.Event = &channels.Event{Kind: channels.EventEdit, Stamp: strconv.Itoa(m.EditDate) + "." + strconv.Itoa(u.UpdateID)}
	return in, ""
}

// reaction turns a reaction update into an Inbound event when it adds a
// reaction, by a user, to a message this process sent.
func (a *Adapter) reaction(r *messageReaction) (channels.Inbound, string) {
	self := a.self.Load()
	if self == nil {
		return channels.Inbound{}, dropNotConfigured
	}
	if r.Chat == nil {
		return channels.Inbound{}, dropUnknownChat
	}
	if r.User == nil {
		return channels.Inbound{}, dropReactionAnon // an anonymous admin or a channel: no sender to check
	}
	if r.User.ID == self.ID {
		return channels.Inbound{}, dropOwnMessage
	}
	old := map[string]bool{}
	for _, x := range r.OldReaction {
		old[x.name()] = true
	}
	var added []string
	for _, x := range r.NewReaction {
		if n := x.name(); n != "" && !old[n] {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return channels.Inbound{}, dropReactionRemoved
	}
	chatID, msgID := strconv.FormatInt(r.Chat.ID, 10), strconv.Itoa(r.MessageID)
	addr, ok := a.sent.Lookup(chatID, msgID)
	if !ok {
		return channels.Inbound{}, dropReactionNotBot
	}
	addr.Channel, addr.AccountID = Name, a.account
	in := channels.Inbound{
		Address: addr, MessageID: msgID, ChatType: channels.Group, CaseSensitive: true, Mentioned: true,
		SenderID: strconv.FormatInt(r.User.ID, 10), SenderName: displayName(r.User),
		Time:  time.Unix(int64(r.Date), 0).UTC(),
		Event: &channels.Event{Kind: channels.EventReaction, Emoji: strings.Join(added, " ")},
	}
	if r.Chat.Type == "private" {
		in.ChatType = channels.Direct
	}
	in.Event.Stamp = in.SenderID + "/" + in.Event.Emoji
	return in, ""
}
