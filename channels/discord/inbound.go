package discord

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// maxQueued bounds events waiting for Run's goroutine; beyond it new
// messages are dropped (and logged) rather than stalling the gateway.
const maxQueued = 10000

// queue hands events from discordgo's read goroutine to Run without ever
// blocking the reader.
type queue struct {
	max    int
	signal chan struct{} // one pending wake-up

	mu    sync.Mutex
	items []any // *discordgo.MessageCreate, *discordgo.MessageUpdate, *reactionAdd, *guildStart; guarded by mu
}

func newQueue(max int) *queue { return &queue{max: max, signal: make(chan struct{}, 1)} }

func (q *queue) push(m any) bool {
	q.mu.Lock()
	if len(q.items) >= q.max {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
	return true
}

func (q *queue) ready() <-chan struct{} { return q.signal }

func (q *queue) take() []any {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// inbound turns a new message into a channels.Inbound; ok is false for
// messages the bot ignores (its own, other bots, system messages, empty
// ones, unmentioned guild messages where a mention is required) and for
// a guild message whose channel could not be looked up (inboundOf).
func (a *Adapter) inbound(ctx context.Context, m *discordgo.Message) (channels.Inbound, bool) {
	in, ok, unplaced := a.inboundOf(ctx, m, false)
	return in, ok && !unplaced
}

// inboundOf is inbound for a new message or, with edit, the edited
// message of a MESSAGE_UPDATE (which opens no thread). unplaced reports a
// guild message whose channel Discord failed to look up (place): it is
// not handed over, as it cannot be judged by the right rules.
func (a *Adapter) inboundOf(ctx context.Context, m *discordgo.Message, edit bool) (in channels.Inbound, ok, unplaced bool) {
	bot := a.bot()
	if m == nil || m.Author == nil || m.Author.ID == bot || m.Author.Bot || m.WebhookID != "" {
		return channels.Inbound{}, false, false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return channels.Inbound{}, false, false
	}
	in = channels.Inbound{
		Address: channels.Address{Channel: Name, AccountID: a.id, ChatID: m.ChannelID}, MessageID: m.ID,
		SenderID: m.Author.ID, SenderName: displayName(m), CaseSensitive: true, Time: m.Timestamp,
	}
	if m.MessageReference != nil {
		in.ReplyToID = m.MessageReference.MessageID
	}
	text := m.Content
	if m.GuildID == "" {
		in.ChatType, in.Mentioned = channels.Direct, true
		text = stripMentions(text, bot, nil)
	} else {
		in.ChatType, in.GuildID = channels.Channel, m.GuildID
		if !a.place(ctx, &in, m.ChannelID) {
			return channels.Inbound{}, false, true
		}
		roles := a.botRoles(m.GuildID, bot)
		in.Mentioned = mentioned(m, bot, roles)
		text = stripMentions(text, bot, roles)
	}
	in.Attachments = attachments(m)
	in.Text = strings.TrimSpace(strings.TrimSpace(text) + "\n" + stickers(m))
	if in.Text == "" && len(in.Attachments) == 0 {
		return channels.Inbound{}, false, false
	}
	if in.ChatType != channels.Direct && !in.Mentioned && a.mention(in) {
		a.log.Debug("unmentioned guild message ignored", zap.String("chat_id", in.ChatID))
		return channels.Inbound{}, false, false
	}
	return a.autoThread(ctx, m, in, edit), true, false
}

// place sets the thread fields of in, a guild message, interaction or
// reaction in channelID, when that channel is a thread: its parent's
// rules then judge it too. It reports false when Discord failed the
// channel's lookup: whether it is a thread is unknown, and judged as a
// channel of its own a thread would escape its parent's rules (a channel
// the rules block, or whose allowFrom lists a few), so the caller must not
// hand it over.
func (a *Adapter) place(ctx context.Context, in *channels.Inbound, channelID string) bool {
	ch := a.channel(ctx, channelID)
	if ch == nil {
		return false
	}
	if ch.IsThread() && ch.ParentID != "" {
		in.ChatID, in.ThreadID, in.ParentChatID = ch.ParentID, channelID, ch.ParentID
	}
	return true
}

func displayName(m *discordgo.Message) string {
	switch {
	case m.Member != nil && m.Member.Nick != "":
		return m.Member.Nick
	case m.Author.GlobalName != "":
		return m.Author.GlobalName
	}
	return m.Author.Username
}

// channel finds a channel in the state (filled by GUILD_CREATE and
// THREAD_CREATE) or, failing that, over REST, caching the answer. A state
// channel is returned as a copy taken under the state's lock: the
// library updates its structs in place as events arrive.
func (a *Adapter) channel(ctx context.Context, id string) *discordgo.Channel {
	if ch, err := a.s.State.Channel(id); err == nil {
		a.s.State.RLock()
		c := *ch
		a.s.State.RUnlock()
		return &c
	}
	ch, err := a.s.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("channel lookup failed", zap.String("chat_id", id), zap.Error(err))
		}
		return nil
	}
	_ = a.s.State.ChannelAdd(ch)
	return ch
}

// botRoles returns the bot member's roles in a guild, if the state has them.
func (a *Adapter) botRoles(guildID, bot string) []string {
	if bot == "" {
		return nil
	}
	mem, err := a.s.State.Member(guildID, bot)
	if err != nil {
		return nil
	}
	a.s.State.RLock() // the library updates members in place
	defer a.s.State.RUnlock()
	return slices.Clone(mem.Roles)
}

// mentioned reports a mention of the bot user or one of its roles, or a
// reply to one of the bot's messages.
func mentioned(m *discordgo.Message, bot string, roles []string) bool {
	if bot == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u != nil && u.ID == bot {
			return true
		}
	}
	for _, r := range m.MentionRoles {
		if slices.Contains(roles, r) {
			return true
		}
	}
	if ref := m.ReferencedMessage; ref != nil && ref.Author != nil && ref.Author.ID == bot {
		return true
	}
	return false
}

// stripMentions removes mentions of the bot and its roles.
func stripMentions(text, bot string, roles []string) string {
	if bot == "" {
		return text
	}
	tokens := []string{"<@" + bot + ">", "<@!" + bot + ">"}
	for _, r := range roles {
		tokens = append(tokens, "<@&"+r+">")
	}
	for _, t := range tokens {
		text = strings.ReplaceAll(text, t+" ", "")
		text = strings.ReplaceAll(text, t, "")
	}
	return strings.TrimSpace(text)
}
