package discord

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestThreadOfBlockedChannelNotAdmittedWhenLookupFails: a message in a
// thread the state does not know is placed by a channel lookup (its
// parent decides which rules judge it). When Discord fails that lookup,
// the message used to be judged as a channel of its own: a thread of a
// channel the rules block was admitted under the guild's rule. It is now
// held and read again, and judged as the thread it is once the lookup
// answers.
func TestThreadOfBlockedChannelNotAdmittedWhenLookupFails(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	const blocked, hidden = "610", "710"
	fake.AddChannel(&discordgo.Channel{ID: blocked, GuildID: guildID, Name: "staff", Type: discordgo.ChannelTypeGuildText})
	fake.AddChannel(&discordgo.Channel{ID: hidden, GuildID: guildID, ParentID: blocked, Name: "t", Type: discordgo.ChannelTypeGuildPublicThread})
	pol, err := access.New(map[access.Account]access.Config{{Channel: Name, AccountID: "default"}: {
		GroupsKey: "guilds", RequireMention: ptrTo(false),
		Groups: map[string]access.GroupRule{guildID: {Channels: map[string]access.GroupRule{blocked: {Allow: ptrTo(false)}}}},
	}}, access.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: &memCursors{},
		MentionRequired: pol.MentionRequired})
	if err != nil {
		t.Fatal(err)
	}
	a.heldEvery = 20 * time.Millisecond
	handled := make(chan channels.Inbound, 16)
	var admitted atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			handled <- in
			if !pol.Check(in).Allowed() {
				return channels.ErrRejected
			}
			admitted.Add(1)
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.FailChannelLookups(1)
	id := fake.SendMessageCreate(&discordgo.Message{ChannelID: hidden, GuildID: guildID, Author: alice, Content: "in a blocked channel's thread"})
	in := nextIn(t, handled)
	if in.MessageID != id || in.ThreadID != hidden || in.ParentChatID != blocked {
		t.Fatalf("handled %+v; want message %s judged as thread %s of channel %s", in, id, hidden, blocked)
	}
	if admitted.Load() != 0 {
		t.Fatal("a message of a blocked channel's thread was admitted")
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCatchUpGuildMessageNotTakenForADirectOne: the history Discord gives
// a catch-up carries no guild id, which the channel's lookup supplies.
// When Discord failed that lookup, the guild messages missed while down
// were handed over as direct messages (judged by dmPolicy: admitted under
// open, answered with a pairing code in the guild channel under pairing).
// The channel is now read again later, and its messages come as the guild's.
func TestCatchUpGuildMessageNotTakenForADirectOne(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	const side = "620" // known to REST only: no state has it
	fake.AddChannel(&discordgo.Channel{ID: side, GuildID: guildID, Name: "side", Type: discordgo.ChannelTypeGuildText})
	store := &memCursors{}
	bot := fake.BotUser()
	mention := func(text string) *discordgo.Message {
		return &discordgo.Message{ChannelID: side, GuildID: guildID, Author: alice, Content: "<@" + bot.ID + "> " + text, Mentions: []*discordgo.User{bot}}
	}
	run := func() (<-chan channels.Inbound, func()) {
		a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: store})
		if err != nil {
			t.Fatal(err)
		}
		a.heldEvery = 20 * time.Millisecond
		got := make(chan channels.Inbound, 64)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
				got <- in
				return nil
			})
		}()
		return got, func() { cancel(); <-done }
	}
	got, stop := run()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.SendMessageCreate(mention("before"))
	nextIn(t, got)
	stop()
	if err := fake.WaitDisconnected(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	missed := fake.SendMessageCreate(mention("while down"))
	fake.FailChannelLookups(1)
	got2, stop2 := run()
	defer stop2()
	in := nextIn(t, got2)
	if in.MessageID != missed || in.ChatType != channels.Channel || in.GuildID != guildID || in.ChatID != side {
		t.Fatalf("caught up %+v; want message %s of guild %s's channel %s", in, missed, guildID, side)
	}
}
