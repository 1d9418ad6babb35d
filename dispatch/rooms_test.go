package dispatch

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// withRoom swaps the harness's runtime for one whose rooms are room(in).
func (h *harness) withRoom(room func(in channels.Inbound) channels.Room) {
	rt := *h.d.Runtime()
	rt.Room = room
	h.d.SetRuntime(&rt)
}

func topicMsg(chat, topic, text string) channels.Inbound {
	m := in("tg", chat, text)
	m.ChatType, m.SenderID, m.SenderName = channels.Group, "41", "Ann"
	if topic != "" {
		m.ThreadID, m.IsTopic = topic, true
	}
	return m
}

// TestRoomPromptAndParentKey: a room's systemPrompt follows the agent's
// into the model request; a topic's session records its group's key as
// parentSessionKey; the group's own session has none.
func TestRoomPromptAndParentKey(t *testing.T) {
	h := newHarness(t, "", nil)
	h.withRoom(func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		if in.ThreadID == "7" {
			r.SystemPrompt = "Topic 7 is about billing."
		}
		return r
	})
	h.handle(topicMsg("-100", "7", "hello topic"))
	h.handle(topicMsg("-100", "", "hello group"))
	h.drained()
	var sawPrompt, sawBare bool
	for _, req := range h.m.requests() {
		last := lastUserTexts(req.Messages)
		switch {
		case len(last) > 0 && strings.Contains(last[0], "hello topic"):
			sawPrompt = strings.Contains(req.System, "Topic 7 is about billing.")
		case len(last) > 0 && strings.Contains(last[0], "hello group"):
			sawBare = !strings.Contains(req.System, "billing")
		}
	}
	if !sawPrompt || !sawBare {
		t.Fatalf("room prompt in the topic's request %v, absent from the group's %v", sawPrompt, sawBare)
	}
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	topicKey := routing.Key{Agent: "main", Channel: "tg", Kind: routing.Group, Peer: "-100"}
	topicKey, err = topicKey.WithThread(routing.Topic, "7")
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(topicKey)
	if err != nil || !ok {
		t.Fatalf("topic session: %v %v", ok, err)
	}
	if e.ParentSessionKey != "agent:main:tg:group:-100" {
		t.Fatalf("parentSessionKey = %q", e.ParentSessionKey)
	}
	g, ok, err := st.Get(topicKey.Parent())
	if err != nil || !ok || g.ParentSessionKey != "" {
		t.Fatalf("group session: %v %v parent %q", ok, err, g.ParentSessionKey)
	}
}

// TestDiscordThreadParentKey: with the real Discord adapter, a mention in
// a thread runs in the thread's session, which records its channel's key
// as parentSessionKey; the channel's own session has none.
func TestDiscordThreadParentKey(t *testing.T) {
	dc := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(dc.Close)
	dc.AddChannel(&discordgo.Channel{ID: "900", GuildID: "50", Type: discordgo.ChannelTypeGuildText})
	dc.AddChannel(&discordgo.Channel{ID: "901", GuildID: "50", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "900"})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, dc: dc, room: channels.DefaultRoom("discord"),
		access: map[access.Account]access.Config{{Channel: "discord", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	if err := dc.WaitReady(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []string{"901", "900"} {
		dc.SendMessageCreate(&discordgo.Message{ChannelID: ch, GuildID: "50", Author: &discordgo.User{ID: "7", Username: "carol"},
			Content: "<@" + dc.BotUser().ID + "> hello", Mentions: []*discordgo.User{dc.BotUser()}})
		if _, err := dc.WaitSent(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	st, err := r.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	thread, err := routing.Parse("agent:main:discord:channel:900:thread:901")
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(thread)
	if err != nil || !ok {
		t.Fatalf("thread session: %v %v", ok, err)
	}
	if e.ParentSessionKey != "agent:main:discord:channel:900" || e.LastThreadID != "901" {
		t.Fatalf("thread session parentSessionKey %q, lastThreadId %q", e.ParentSessionKey, e.LastThreadID)
	}
	c, ok, err := st.Get(thread.Parent())
	if err != nil || !ok || c.ParentSessionKey != "" {
		t.Fatalf("channel session: %v %v parent %q", ok, err, c.ParentSessionKey)
	}
}

// TestInheritParentSeedsNewThread: with inheritParent a new thread's
// first turn carries its parent's recent conversation, framed as context,
// once; without it the thread starts empty.
func TestInheritParentSeedsNewThread(t *testing.T) {
	h := newHarness(t, "", nil)
	inherit := channels.InheritDigest
	h.withRoom(func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.InheritParent = inherit
		return r
	})
	h.handle(topicMsg("-100", "", "the deploy is on friday"))
	h.drained()
	h.handle(topicMsg("-100", "3", "when is the deploy?"))
	h.drained()
	h.handle(topicMsg("-100", "3", "and the rollback?"))
	h.drained()
	inherit = channels.InheritNone
	h.handle(topicMsg("-100", "4", "fresh topic"))
	h.drained()

	hist := h.history("agent:main:tg:group:-100:topic:3")
	var seeds int
	for _, m := range hist {
		if m.Role == sessions.RoleUser && strings.Contains(m.Text(), "continues a conversation from its parent channel") {
			seeds++
			if !strings.Contains(m.Text(), "the deploy is on friday") || !strings.Contains(m.Text(), "re: [Ann] the deploy is on friday") {
				t.Errorf("seed lacks the parent's messages:\n%s", m.Text())
			}
		}
	}
	if seeds != 1 {
		t.Fatalf("%d parent seeds in the thread's transcript, want 1", seeds)
	}
	for _, m := range h.history("agent:main:tg:group:-100:topic:4") {
		if strings.Contains(m.Text(), "parent channel") {
			t.Fatal("a thread without inheritParent was seeded")
		}
	}
}

// TestInheritParentFork: with inheritParent: fork a new topic's session
// starts with a copy of its group's transcript as it stood (seed 002: the
// thread branches from the parent's head): the first request holds the
// parent's messages as they were, not a digest, the copy is made once,
// and what the group says afterwards stays out of the topic.
func TestInheritParentFork(t *testing.T) {
	m := &model{}
	h := newHarness(t, "", m)
	h.withRoom(func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.InheritParent = channels.InheritFork
		return r
	})
	h.handle(topicMsg("-100", "", "the deploy is on friday"))
	h.drained()
	h.handle(topicMsg("-100", "3", "when is the deploy?"))
	h.drained()
	h.handle(topicMsg("-100", "", "the channel moves on"))
	h.drained()
	h.handle(topicMsg("-100", "3", "and the rollback?"))
	h.drained()

	want := []string{"user: [Ann] the deploy is on friday", "assistant: re: [Ann] the deploy is on friday",
		"user: [Ann] when is the deploy?", "assistant: re: [Ann] when is the deploy?",
		"user: [Ann] and the rollback?", "assistant: re: [Ann] and the rollback?"}
	var got []string
	for _, msg := range h.history("agent:main:tg:group:-100:topic:3") {
		got = append(got, msg.Role+": "+msg.Text())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("topic transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The topic's first request: the parent's exchange as two messages,
	// then the new question.
	m.mu.Lock()
	first := m.calls[1]
	m.mu.Unlock()
	if n := len(first.Messages); n != 3 || first.Messages[0].Text() != "[Ann] the deploy is on friday" ||
		first.Messages[1].Role != sessions.RoleAssistant {
		t.Fatalf("the topic's first request holds %d messages: %+v", n, first.Messages)
	}
	st, err := h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.Parse("agent:main:tg:group:-100:topic:3")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Get(k)
	if err != nil || e.MessageCount != len(want) {
		t.Fatalf("topic entry counts %d messages (%v), want %d", e.MessageCount, err, len(want))
	}
}
