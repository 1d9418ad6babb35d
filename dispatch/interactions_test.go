package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/routing"
)

const (
	slashGuild   = "500" // admitted by the account's guilds
	slashChannel = "600"
	otherGuild   = "501" // not admitted
	otherChannel = "601"
)

var (
	owner = &discordgo.User{ID: "42", Username: "owner"}
	guest = &discordgo.User{ID: "43", Username: "guest"}
)

// slashRig is a dispatcher with a running Discord adapter (gateway and
// REST against a fake Discord) and the account's access policy in force.
type slashRig struct {
	h    *harness
	fake *discordtest.Server
}

func startSlash(t *testing.T) *slashRig {
	t.Helper()
	h := newHarness(t, "", nil)
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true, Guilds: []*discordgo.Guild{
		{ID: slashGuild, Channels: []*discordgo.Channel{{ID: slashChannel, Type: discordgo.ChannelTypeGuildText}}},
		{ID: otherGuild, Channels: []*discordgo.Channel{{ID: otherChannel, Type: discordgo.ChannelTypeGuildText}}},
	}})
	cfg := discord.Config{Token: "tok"}
	rules := access.Config{Groups: map[string]access.GroupRule{slashGuild: {}}, GroupsKey: "guilds"}
	pol, err := access.New(map[access.Account]access.Config{{Channel: discord.Name, AccountID: "default"}: rules},
		access.Options{Owners: []string{"discord:" + owner.ID}})
	if err != nil {
		t.Fatal(err)
	}
	rt := *h.d.Runtime()
	rt.Access = func(in channels.Inbound) Verdict {
		d := pol.Check(in)
		if !d.Allowed() {
			return Verdict{Reply: d.Reply, Reason: d.Reason}
		}
		return Verdict{Allow: true, Privileged: pol.Privileged(in)}
	}
	h.d.SetRuntime(&rt)
	// The adapter gets the policy's answers as the daemon hands them in.
	a, err := discord.New("default", cfg, discord.Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t),
		MentionRequired: pol.MentionRequired,
		SlashAllowed: func(in channels.Inbound) bool {
			d := pol.Check(in)
			return d.Allowed() || d.Reason == access.ReasonSenderNotListed
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h.d.Handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		fake.Close()
	})
	if err := fake.WaitReady(ctxWait(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	return &slashRig{h: h, fake: fake}
}

func ctxWait(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// replies waits for n interaction replies and returns them all.
func (r *slashRig) replies(t *testing.T, n int) []discordtest.InteractionReply {
	t.Helper()
	got, err := r.fake.WaitInteractionReplies(ctxWait(t), n)
	if err != nil {
		t.Fatalf("waiting for %d interaction replies, have %+v: %v", n, got, err)
	}
	return got
}

// talk posts a mentioned message in the admitted channel and waits for
// the agent's answer there, so the channel's session exists; it returns
// the session id.
func (r *slashRig) talk(t *testing.T) string {
	t.Helper()
	bot := r.fake.BotUser()
	n := len(r.fake.Sent())
	r.fake.SendMessageCreate(&discordgo.Message{ChannelID: slashChannel, Author: owner,
		Content: "<@" + bot.ID + "> hello", Mentions: []*discordgo.User{bot}})
	if _, err := r.fake.WaitSent(ctxWait(t), n+1); err != nil {
		t.Fatal(err)
	}
	r.h.drained()
	return r.sessionID(t)
}

func (r *slashRig) sessionID(t *testing.T) string {
	t.Helper()
	st, err := r.h.mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	k, err := routing.Parse("agent:main:discord:channel:" + slashChannel)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		return ""
	}
	return e.SessionID
}

// TestSlashStatusIsEphemeral: /status as a slash command runs the chat
// command and its answer, the session's status, goes back through the
// interaction for the caller only (flag 64), not into the channel.
func TestSlashStatusIsEphemeral(t *testing.T) {
	r := startSlash(t)
	sid := r.talk(t)
	id := r.fake.SendInteraction(r.fake.SlashCommand(slashChannel, guest, "status", nil))
	reps := r.replies(t, 2)
	r.h.drained()
	want := discordtest.InteractionReply{Kind: discordtest.ReplyCallback, InteractionID: id,
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource, Flags: discordgo.MessageFlagsEphemeral}
	if diff := cmp.Diff(want, reps[0]); diff != "" {
		t.Fatalf("acknowledgement (-want +got):\n%s", diff)
	}
	edit := reps[1]
	if edit.Kind != discordtest.ReplyEdit || edit.InteractionID != id ||
		!strings.Contains(edit.Content, "Session: agent:main:discord:channel:"+slashChannel) ||
		!strings.Contains(edit.Content, "Id: "+sid) || !strings.Contains(edit.Content, "Queue: ") {
		t.Fatalf("status reply %+v", edit)
	}
	if n := len(r.fake.Sent()); n != 1 {
		t.Errorf("%d channel messages, want only the agent's first answer", n)
	}
	if n := len(r.h.m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (/status runs no turn)", n)
	}
}

// TestSlashNewIsPublicAndStartsASession: /new from an owner answers in
// public through the interaction (no ephemeral flag) and the channel's
// session is a new one.
func TestSlashNewIsPublicAndStartsASession(t *testing.T) {
	r := startSlash(t)
	before := r.talk(t)
	id := r.fake.SendInteraction(r.fake.SlashCommand(slashChannel, owner, "new", nil))
	reps := r.replies(t, 2)
	r.h.drained()
	want := []discordtest.InteractionReply{
		{Kind: discordtest.ReplyCallback, InteractionID: id, Type: discordgo.InteractionResponseDeferredChannelMessageWithSource},
		{Kind: discordtest.ReplyEdit, InteractionID: id, Content: "Started a new session."},
	}
	if diff := cmp.Diff(want, reps); diff != "" {
		t.Fatalf("replies (-want +got):\n%s", diff)
	}
	if after := r.sessionID(t); after == "" || after == before {
		t.Errorf("session id %q after /new, was %q: want a new one", after, before)
	}
}

// TestSlashPrivilegedCommandRefused: a member who may talk but is not
// allowed to reset the shared session gets a short ephemeral refusal; the
// session stays and nothing is journaled.
func TestSlashPrivilegedCommandRefused(t *testing.T) {
	r := startSlash(t)
	before := r.talk(t)
	id := r.fake.SendInteraction(r.fake.SlashCommand(slashChannel, guest, "new", nil))
	reps := r.replies(t, 1)
	want := []discordtest.InteractionReply{{Kind: discordtest.ReplyCallback, InteractionID: id,
		Type: discordgo.InteractionResponseChannelMessageWithSource, Flags: discordgo.MessageFlagsEphemeral,
		Content: "Only allowed members can use /new here."}}
	if diff := cmp.Diff(want, reps); diff != "" {
		t.Fatalf("replies (-want +got):\n%s", diff)
	}
	// The owner's /help after it proves the refusal was handled in full.
	r.fake.SendInteraction(r.fake.SlashCommand(slashChannel, owner, "help", nil))
	if got := r.replies(t, 3); len(got) != 3 {
		t.Fatalf("replies %+v", got)
	}
	r.h.drained()
	if after := r.sessionID(t); after != before {
		t.Errorf("session changed from %q to %q by a refused /new", before, after)
	}
}

// TestSlashAccessPolicyApplies: a slash command from a guild the account
// does not admit gets nothing through: no answer, no session, no turn.
func TestSlashAccessPolicyApplies(t *testing.T) {
	r := startSlash(t)
	r.fake.SendInteraction(r.fake.SlashCommand(otherChannel, owner, "status", nil))
	r.fake.SendInteraction(r.fake.SlashCommand(otherChannel, owner, "new", map[string]any{"args": "hello"}))
	// Interactions are handled in order: once /help in the admitted
	// channel is answered, the two before it were decided.
	help := r.fake.SendInteraction(r.fake.SlashCommand(slashChannel, owner, "help", nil))
	reps := r.replies(t, 2)
	r.h.drained()
	for _, rep := range reps {
		if rep.InteractionID != help {
			t.Errorf("answer to a refused guild: %+v", rep)
		}
	}
	if !strings.Contains(reps[1].Content, "/status") || reps[0].Flags != discordgo.MessageFlagsEphemeral {
		t.Errorf("help replies %+v", reps)
	}
	if n := len(r.h.m.requests()); n != 0 {
		t.Errorf("%d model calls, want 0", n)
	}
	if s := r.fake.Sent(); len(s) != 0 {
		t.Errorf("channel messages %+v", s)
	}
	if regs := r.fake.Registrations(); len(regs) != 1 || regs[0].GuildID != slashGuild {
		t.Errorf("registrations %+v, want the admitted guild only", regs)
	}
}
