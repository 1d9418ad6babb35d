package discord

import (
	"context"
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
// its own session (parent key recorded) and the reply goes into it. When
// Discord refuses, the conversation stays in the channel.
func (a *Adapter) autoThread(ctx context.Context, m *discordgo.Message, in channels.Inbound) channels.Inbound {
	if a.opts.Room == nil || in.ChatType == channels.Direct || in.ThreadID != "" || !in.Mentioned || !a.opts.Room(in).AutoThread {
		return in
	}
	th, err := a.s.MessageThreadStartComplex(m.ChannelID, m.ID, &discordgo.ThreadStart{
		Name: threadName(in.Text), AutoArchiveDuration: threadArchiveMinutes,
	}, discordgo.WithContext(ctx))
	if err != nil {
		a.log.Warn("auto thread not opened", zap.String("chat_id", in.ChatID), zap.Error(err))
		return in
	}
	in.ParentChatID, in.ThreadID = in.ChatID, th.ID
	return in
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
