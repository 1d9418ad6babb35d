package discord

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
)

// TestAutoThread: in a channel whose room has autoThread, a mention opens
// a thread named from the message's first line and the message moves into
// it (thread id, parent recorded); a reply lands in the thread; a message
// already in a thread, an unmentioned one and another channel open none.
func TestAutoThread(t *testing.T) {
	room := func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.AutoThread = in.ChatID == channelID
		return r
	}
	fo := fakeOptions()
	fo.NoEcho = true
	fo.Guilds[0].Channels = append(fo.Guilds[0].Channels, &discordgo.Channel{ID: "778", Name: "other", Type: discordgo.ChannelTypeGuildText})
	h := startWith(t, Config{}, fo, newRules(t, access.Config{RequireMention: boolPtr(false)}).options(Options{Room: room}))
	bot := h.fake.BotUser()
	long := strings.Repeat("x", 150)
	id := h.post(&discordgo.Message{ChannelID: channelID, GuildID: guildID,
		Content: "<@" + bot.ID + "> " + long + "\nsecond line", Mentions: []*discordgo.User{bot}})
	in := h.next(t)
	if in.MessageID != id {
		t.Fatalf("got %s, want %s", in.MessageID, id)
	}
	threads := h.fake.Threads()
	if len(threads) != 1 {
		t.Fatalf("threads started: %+v", threads)
	}
	th := threads[0]
	if th.ParentID != channelID || th.MessageID != id || len([]rune(th.Name)) != maxThreadName || strings.Contains(th.Name, "second") {
		t.Fatalf("thread %+v", th)
	}
	if in.ThreadID != th.ThreadID || in.ParentChatID != channelID || in.ChatID != channelID {
		t.Fatalf("inbound not moved into the thread: %+v", in)
	}
	if err := h.a.Send(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: in.ChatID, ThreadID: in.ThreadID}, Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	if sent := h.fake.Sent(); len(sent) != 1 || sent[0].ChannelID != th.ThreadID {
		t.Fatalf("reply went to %+v, want thread %s", sent, th.ThreadID)
	}

	// In the thread, unmentioned, and in a channel without autoThread: no new thread.
	h.post(&discordgo.Message{ChannelID: th.ThreadID, GuildID: guildID, Content: "<@" + bot.ID + "> follow-up", Mentions: []*discordgo.User{bot}})
	if got := h.next(t); got.ThreadID != th.ThreadID {
		t.Fatalf("follow-up in the thread: %+v", got)
	}
	h.post(&discordgo.Message{ChannelID: channelID, GuildID: guildID, Content: "just chatting"})
	if got := h.next(t); got.ThreadID != "" {
		t.Fatalf("unmentioned message moved to a thread: %+v", got)
	}
	h.post(&discordgo.Message{ChannelID: "778", GuildID: guildID, Content: "<@" + bot.ID + "> hi", Mentions: []*discordgo.User{bot}})
	if got := h.next(t); got.ThreadID != "" {
		t.Fatalf("a channel without autoThread opened a thread: %+v", got)
	}
	if n := len(h.fake.Threads()); n != 1 {
		t.Fatalf("%d threads started, want 1", n)
	}
}

func TestThreadName(t *testing.T) {
	for in, want := range map[string]string{"": "Conversation", "  \n  ": "Conversation", "hello\nworld": "hello",
		strings.Repeat("é", 120): strings.Repeat("é", 99) + "…"} {
		if got := threadName(in); got != want {
			t.Errorf("threadName(%q) = %q, want %q", in, got, want)
		}
	}
}
func boolPtr(v bool) *bool { return &v }

// TestAutoThreadNotOpenedTwice: a message of an autoThread room that
// already has its thread stays in it. An edit of the message (a
// MESSAGE_UPDATE) is routed to the thread the message opened, and a
// message whose thread exists though this process never heard of it (it
// opened it, then died before the message was journaled: the catch-up
// brings the message again) goes to that thread; neither starts another
// (Discord refuses a second thread on a message, code 160004, and the
// conversation would fall back to the channel).
func TestAutoThreadNotOpenedTwice(t *testing.T) {
	room := func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.AutoThread = in.ChatID == channelID
		return r
	}
	fo := fakeOptions()
	fo.NoEcho = true
	h := startWith(t, Config{}, fo, newRules(t, access.Config{RequireMention: boolPtr(false)}).options(Options{Room: room}))
	bot := h.fake.BotUser()
	msg := &discordgo.Message{ChannelID: channelID, GuildID: guildID, Content: "<@" + bot.ID + "> question",
		Mentions: []*discordgo.User{bot}}
	id := h.post(msg)
	in := h.next(t)
	if in.MessageID != id || in.ThreadID == "" {
		t.Fatalf("first message not moved into a thread: %+v", in)
	}
	thread := in.ThreadID

	edited := *msg
	edited.Content = "<@" + bot.ID + "> question, rephrased"
	now := time.Now()
	edited.EditedTimestamp = &now
	h.fake.Dispatch("MESSAGE_UPDATE", &edited)
	got := h.next(t)
	if got.Event == nil || got.Event.Kind != channels.EventEdit || got.MessageID != id {
		t.Fatalf("edit delivered as %+v", got)
	}
	if got.ThreadID != thread || got.ParentChatID != channelID {
		t.Fatalf("edit routed to thread %q (parent %q), want the message's thread %s", got.ThreadID, got.ParentChatID, thread)
	}

	// A thread on the message that only REST knows (opened before a crash).
	const earlier = "123456789"
	h.fake.AddChannel(&discordgo.Channel{ID: earlier, GuildID: guildID, ParentID: channelID, Type: discordgo.ChannelTypeGuildPublicThread})
	h.post(&discordgo.Message{ID: earlier, ChannelID: channelID, GuildID: guildID, Content: "<@" + bot.ID + "> again",
		Mentions: []*discordgo.User{bot}})
	if got := h.next(t); got.MessageID != earlier || got.ThreadID != earlier || got.ParentChatID != channelID {
		t.Fatalf("message whose thread exists routed to %+v, want thread %s", got, earlier)
	}
	if n := len(h.fake.Threads()); n != 1 {
		t.Fatalf("%d threads started, want 1: %+v", n, h.fake.Threads())
	}
}
