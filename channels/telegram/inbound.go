package telegram

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/gateway/gateway/channels"
)

// generalTopic is the forum topic of messages without message_thread_id.
const generalTopic = "1"

// migratedPrefix marks the message ids of a group that a supergroup
// replaced, reported under the supergroup's chat id (a late message): they
// must not collide with the supergroup's own ids.
const migratedPrefix = "m"

// drop reasons, logged at debug (stable values).
const (
	dropNotMessage    = "not_a_message"
	dropOwnMessage    = "own_message"
	dropChannel       = "channel_post"
	dropAutoForward   = "automatic_forward"
	dropNoMention     = "no_mention"
	dropOtherBot      = "command_for_other_bot"
	dropEmpty         = "no_text"
	dropUnknownChat   = "unknown_chat_type"
	dropNotConfigured = "not_connected"
)

// botIdentity is what normalisation needs to know about the bot itself.
type botIdentity struct {
	ID        int64
	UserName  string // without "@"
	FirstName string // the display name (BotName)
}

// normalise turns an update into an Inbound, or returns a drop reason
// for updates that must be acknowledged without calling the Handler (with
// dropNoMention, the Inbound the message would have been).
func (a *Adapter) normalise(u *update) (channels.Inbound, string) {
	switch {
	case u.MessageReaction != nil:
		return a.reaction(u.MessageReaction)
	case u.Message == nil && u.EditedMessage != nil:
		return a.edited(u)
	}
	m := u.Message
	if m == nil {
		if u.ChannelPost != nil {
			return channels.Inbound{}, dropChannel
		}
		return channels.Inbound{}, dropNotMessage
	}
	if m.Chat == nil {
		return channels.Inbound{}, dropUnknownChat
	}
	if m.MigrateToChatID != 0 {
		a.recordMigration(m.Chat.ID, m.MigrateToChatID)
		return a.movedEvent(m.Chat.ID, m.MigrateToChatID), ""
	}
	if m.MigrateFromChatID != 0 {
		a.recordMigration(m.MigrateFromChatID, m.Chat.ID)
		return a.movedEvent(m.MigrateFromChatID, m.Chat.ID), ""
	}
	self := a.self.Load()
	if self == nil {
		return channels.Inbound{}, dropNotConfigured
	}
	if m.From != nil && m.From.ID == self.ID {
		return channels.Inbound{}, dropOwnMessage
	}
	in := channels.Inbound{
		Address:       channels.Address{Channel: Name, AccountID: a.account, ChatID: strconv.FormatInt(m.Chat.ID, 10)},
		MessageID:     strconv.Itoa(m.MessageID),
		CaseSensitive: true,
		Time:          time.Unix(int64(m.Date), 0).UTC(),
	}
	switch m.Chat.Type {
	case "private":
		in.ChatType = channels.Direct
		in.Mentioned = true
	case "group", "supergroup":
		if m.IsAutomaticForward && !a.cfg.AutomaticForwards {
			return channels.Inbound{}, dropAutoForward // a linked channel's post, copied in
		}
		in.ChatType = channels.Group
		if live := a.liveChatID(m.Chat.ID); live != m.Chat.ID {
			// A late message of a group already upgraded: it belongs to
			// the supergroup's conversation, and its id to the old chat.
			in.ChatID = strconv.FormatInt(live, 10)
			in.MessageID = migratedPrefix + in.MessageID
		}
	case "channel":
		return channels.Inbound{}, dropChannel
	default:
		return channels.Inbound{}, dropUnknownChat
	}
	switch {
	case m.SenderChat != nil:
		// Sent on behalf of a chat: the group itself (an anonymous
		// administrator), a linked channel, or a channel a member posts
		// as. "from" then holds a placeholder user every such message
		// shares (@GroupAnonymousBot, @Channel_Bot, Telegram).
		in.SenderID = strconv.FormatInt(m.SenderChat.ID, 10)
		in.SenderName = m.SenderChat.Title
	case m.From != nil:
		in.SenderID = strconv.FormatInt(m.From.ID, 10)
		in.SenderName = displayName(m.From)
	}
	isTopic := m.IsTopicMessage || m.Chat.IsForum
	switch {
	case isTopic && in.ChatType == channels.Group:
		in.IsTopic = true
		in.ThreadID = generalTopic
		if m.IsTopicMessage && m.MessageThreadID != 0 {
			in.ThreadID = strconv.Itoa(m.MessageThreadID)
		}
	case in.ChatType == channels.Direct && m.MessageThreadID != 0:
		// A private chat with topics: each thread is its own conversation
		// (:thread:<id>), replies go back into it.
		in.ThreadID = strconv.Itoa(m.MessageThreadID)
	}
	// In a topic every message "replies" to the topic's root message; that
	// is neither a reply nor a reply to the bot.
	reply := m.ReplyToMessage
	if reply != nil && m.IsTopicMessage && reply.MessageID == m.MessageThreadID {
		reply = nil
	}
	if reply != nil {
		in.ReplyToID = strconv.Itoa(reply.MessageID)
		if strings.HasPrefix(in.MessageID, migratedPrefix) {
			in.ReplyToID = migratedPrefix + in.ReplyToID
		}
		if reply.From != nil && reply.From.ID == self.ID {
			in.Mentioned = true
		}
	}

	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	text, mentioned, command, other := stripAddressing(text, entities, self)
	if other {
		return channels.Inbound{}, dropOtherBot
	}
	if mentioned || command {
		in.Mentioned = true
	}
	in.Attachments = a.attachments(&m.Message)
	if p := placeholder(&m.Message); p != "" && len(in.Attachments) == 0 {
		if text != "" {
			text = p + " " + text
		} else {
			text = p
		}
	}
	in.Text = text
	if in.ChatType == channels.Group {
		// Both remember an addressed message: ask both.
		paste, album := a.pastes.follow(in), a.albums.follow(in, m.MediaGroupID)
		in.Mentioned = in.Mentioned || paste || album
	}
	if in.ChatType == channels.Group && !in.Mentioned && a.needsMention(in) {
		return in, dropNoMention // in: for an album's later file (albumFollow.hold)
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Attachments) == 0 {
		return channels.Inbound{}, dropEmpty
	}
	return in, ""
}

// needsMention asks Options.MentionRequired (the live, hot-reloadable
// access rules); without it every group message needs a mention
// (requireMention's default).
func (a *Adapter) needsMention(in channels.Inbound) bool {
	if a.opts.MentionRequired != nil {
		return a.opts.MentionRequired(in)
	}
	return true
}

func displayName(u *tgbotapi.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.UserName
	}
	return name
}

// textCut is a span of a text (UTF-16 units) that stripAddressing
// replaces with repl.
type textCut struct {
	from, to int
	repl     string
}

// stripAddressing removes mentions of the bot from text and turns a leading
// "/cmd@bot" into "/cmd". mentioned reports a mention of the bot, command a
// leading bot command for this bot (or for every bot), other a leading
// command addressed to another bot. Offsets are UTF-16 code units.
func stripAddressing(text string, entities []tgbotapi.MessageEntity, self *botIdentity) (out string, mentioned, command, other bool) {
	if len(entities) == 0 || text == "" {
		return strings.TrimSpace(text), false, false, false
	}
	units := utf16.Encode([]rune(text))
	var cuts []textCut
	for _, e := range entities {
		from, to := e.Offset, e.Offset+e.Length
		if from < 0 || to > len(units) || from >= to {
			continue
		}
		switch e.Type {
		case "mention":
			name := string(utf16.Decode(units[from:to]))
			if strings.EqualFold(strings.TrimPrefix(name, "@"), self.UserName) {
				mentioned = true
				cuts = append(cuts, textCut{from: from, to: to})
			}
		case "text_mention":
			if e.User != nil && e.User.ID == self.ID {
				mentioned = true
				cuts = append(cuts, textCut{from: from, to: to})
			}
		case "bot_command":
			if from != 0 && !onlyMentions(units[:from], cuts) {
				continue // a command is the message's start ("@bot /new" too)
			}
			cmd := string(utf16.Decode(units[from:to]))
			name, target, hasTarget := strings.Cut(cmd, "@")
			switch {
			case !hasTarget:
				command = true
			case strings.EqualFold(target, self.UserName):
				command = true
				cuts = append(cuts, textCut{from: from, to: to, repl: name})
			default:
				other = true
			}
		}
	}
	if len(cuts) == 0 {
		return strings.TrimSpace(text), mentioned, command, other
	}
	var b strings.Builder
	b.Grow(len(text))
	pos := 0
	for _, c := range cuts { // entities arrive sorted by offset
		if c.from < pos {
			continue
		}
		b.WriteString(string(utf16.Decode(units[pos:c.from])))
		b.WriteString(c.repl)
		pos = c.to
		// "hey @bot, do x" -> "hey do x": drop punctuation glued to the mention.
		if c.repl == "" && pos < len(units) && (units[pos] == ',' || units[pos] == ':') {
			pos++
		}
	}
	b.WriteString(string(utf16.Decode(units[pos:])))
	return collapseSpaces(b.String()), mentioned, command, other
}

// onlyMentions reports whether head (the text before a command) holds
// nothing but the bot's mentions cut so far, spaces and the punctuation
// glued to a mention: "@bot /new" and "@bot, /new" start with a command.
func onlyMentions(head []uint16, cuts []textCut) bool {
	for i := 0; i < len(head); i++ {
		in := false
		for _, c := range cuts {
			if i >= c.from && i < c.to {
				in, i = true, c.to-1
				break
			}
		}
		if !in && head[i] != ' ' && head[i] != '\n' && head[i] != ',' && head[i] != ':' {
			return false
		}
	}
	return len(cuts) > 0
}

// collapseSpaces trims s and squeezes runs of spaces left by a removed
// mention; newlines are kept.
func collapseSpaces(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prevSpace := false
	for _, r := range s {
		if r == ' ' {
			if prevSpace {
				continue
			}
			prevSpace = true
		} else {
			prevSpace = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// placeholder describes a message's non-text content, "" for none.
func placeholder(m *tgbotapi.Message) string {
	switch {
	case len(m.Photo) > 0:
		return "[photo]"
	case m.Sticker != nil:
		if m.Sticker.Emoji != "" {
			return "[sticker " + m.Sticker.Emoji + "]"
		}
		return "[sticker]"
	case m.Voice != nil:
		return "[voice message]"
	case m.VideoNote != nil:
		return "[video message]"
	case m.Animation != nil: // also sets Document; check first
		return "[animation]"
	case m.Video != nil:
		return "[video]"
	case m.Audio != nil:
		if t := strings.TrimSpace(m.Audio.Performer + " " + m.Audio.Title); t != "" {
			return "[audio " + t + "]"
		}
		return "[audio]"
	case m.Document != nil:
		if m.Document.FileName != "" {
			return "[document " + m.Document.FileName + "]"
		}
		return "[document]"
	case m.Venue != nil:
		return "[venue " + m.Venue.Title + "]"
	case m.Location != nil:
		return "[location " + strconv.FormatFloat(m.Location.Latitude, 'f', 5, 64) + "," +
			strconv.FormatFloat(m.Location.Longitude, 'f', 5, 64) + "]"
	case m.Contact != nil:
		return "[contact " + strings.TrimSpace(m.Contact.FirstName+" "+m.Contact.LastName) + "]"
	case m.Poll != nil:
		return "[poll: " + m.Poll.Question + "]"
	case m.Dice != nil:
		return "[dice " + m.Dice.Emoji + " " + strconv.Itoa(m.Dice.Value) + "]"
	}
	return ""
}
