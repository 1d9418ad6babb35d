package discord

import (
	"context"
	"errors"
	"strings"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// threadArchiveMinutes is how long an auto-opened thread stays active
// without messages (Discord's one-day setting).
const threadArchiveMinutes = 1440

// maxThreadName is Discord's limit on a thread name.
const maxThreadName = 100

// autoThread opens a thread on a message that addresses the bot in a
// channel whose room has autoThread, and moves in there: the thread gets
// its own session (parent key recorded) and the reply goes into it. A
// message that has its thread already (an edit of it, or the message
// again after a restart: a thread started from a message has the
// message's id) moves into that one; an edit never opens one. When
// Discord refuses, the conversation stays in the channel.
func (a *Adapter) autoThread(ctx context.Context, m *discordgo.Message, in channels.Inbound, edit bool) channels.Inbound {
	if a.opts.Room == nil || in.ChatType == channels.Direct || in.ThreadID != "" || !in.Mentioned || !a.opts.Room(in).AutoThread {
		return in
	}
	if a.hasThread(m) {
		in.ParentChatID, in.ThreadID = in.ChatID, m.ID
		return in
	}
	if edit {
		return in
	}
	th, err := a.s.MessageThreadStartComplex(m.ChannelID, m.ID, &discordgo.ThreadStart{
		Name: threadName(in.Text), AutoArchiveDuration: threadArchiveMinutes,
	}, discordgo.WithContext(ctx))
	var re *discordgo.RESTError
	switch {
	case errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeThreadAlreadyCreatedForThisMessage:
		in.ParentChatID, in.ThreadID = in.ChatID, m.ID
	case err != nil:
		a.log.Warn("auto thread not opened", zap.String("chat_id", in.ChatID), zap.Error(err))
	default:
		in.ParentChatID, in.ThreadID = in.ChatID, th.ID
	}
	return in
}

// hasThread reports whether a thread was started from m: the message
// says so (its thread field, REST history) or the gateway announced a
// thread with its id in its channel.
func (a *Adapter) hasThread(m *discordgo.Message) bool {
	if m.Thread != nil && m.Thread.ID == m.ID {
		return true
	}
	ch, err := a.s.State.Channel(m.ID)
	if err != nil {
		return false
	}
	a.s.State.RLock()
	defer a.s.State.RUnlock()
	return ch.IsThread() && ch.ParentID == m.ChannelID
}

// threadName is the first line of the message, cut to Discord's limit.
func threadName(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > maxThreadName {
		line = strings.TrimSpace(string(r[:maxThreadName-1])) + "…"
	}
	if line == "" {
		return "Conversation"
	}
	return line
}
