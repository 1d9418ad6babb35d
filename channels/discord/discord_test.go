package discord

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

type accessRule = access.GroupRule

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	guildID   = "500"
	channelID = "600"
	threadID  = "700"
	dmID      = "900"
	botRole   = "800"
)

var alice = &discordgo.User{ID: "42", Username: "alice", GlobalName: "Alice"}

func fakeOptions() discordtest.Options {
	return discordtest.Options{
		Token:    "tok",
		BotRoles: []string{botRole},
		Guilds: []*discordgo.Guild{{
			ID: guildID, Name: "g",
			Channels: []*discordgo.Channel{{ID: channelID, Name: "general", Type: discordgo.ChannelTypeGuildText}},
			Threads:  []*discordgo.Channel{{ID: threadID, Name: "t", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: channelID}},
		}},
	}
}

type harness struct {
	fake *discordtest.Server
	a    *Adapter
	got  chan channels.Inbound
	done chan error
	stop context.CancelFunc
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testRules stands in for the daemon's hot-reloaded access policy over the
// account's rules: it answers MentionRequired and SlashAllowed as gatewayd
// does (tests may import access; the adapter may not).
type testRules struct {
	t   *testing.T
	pol atomic.Pointer[access.Policy]
}

func newRules(t *testing.T, c access.Config) *testRules {
	t.Helper()
	r := &testRules{t: t}
	r.set(c)
	return r
}

// set replaces the rules, as a reload replaces the daemon's policy; the
// caller then tells the adapter (ResyncSlash).
func (r *testRules) set(c access.Config) {
	r.t.Helper()
	c.GroupsKey = "guilds"
	pol, err := access.New(map[access.Account]access.Config{{Channel: Name, AccountID: "default"}: c}, access.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.pol.Store(pol)
}

// options returns opts with the functions the daemon hands the adapter,
// answering from the rules in force.
func (r *testRules) options(opts Options) Options {
	opts.MentionRequired = func(in channels.Inbound) bool { return r.pol.Load().MentionRequired(in) }
	opts.SlashAllowed = func(in channels.Inbound) bool {
		d := r.pol.Load().Check(in)
		return d.Allowed() || d.Reason == access.ReasonSenderNotListed
	}
	return opts
}

// start runs an adapter against a fake Discord until the test ends.
func start(t *testing.T, cfg Config, fo discordtest.Options) *harness {
	t.Helper()
	return startWith(t, cfg, fo, Options{})
}

// startWith is start with adapter options (HTTPClient is set, and Logger
// unless given).
func startWith(t *testing.T, cfg Config, fo discordtest.Options, opts Options) *harness {
	t.Helper()
	fake := discordtest.New(fo)
	cfg.Token = "tok"
	opts.HTTPClient = fake.Client()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	a, err := New("default", cfg, opts)
	if err != nil {
		fake.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{fake: fake, a: a, got: make(chan channels.Inbound, 64), done: make(chan error, 1), stop: cancel}
	go func() {
		h.done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			h.got <- in
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Errorf("Run: %v", err)
		}
		fake.Close()
	})
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	return h
}

// next returns the next delivered message.
func (h *harness) next(t *testing.T) channels.Inbound {
	t.Helper()
	select {
	case in := <-h.got:
		return in
	case <-time.After(15 * time.Second):
		t.Fatal("no message delivered")
	}
	return channels.Inbound{}
}

func (h *harness) post(m *discordgo.Message) string {
	if m.Author == nil {
		m.Author = alice
	}
	return h.fake.SendMessageCreate(m)
}

// marker posts a mentioned message and returns once it is delivered,
// proving that everything posted before it was handled (events are handled
// in order).
func (h *harness) marker(t *testing.T) []channels.Inbound {
	t.Helper()
	bot := h.fake.BotUser()
	id := h.post(&discordgo.Message{ChannelID: channelID, Content: "<@" + bot.ID + "> marker", Mentions: []*discordgo.User{bot}})
	var before []channels.Inbound
	for {
		in := h.next(t)
		if in.MessageID == id {
			return before
		}
		before = append(before, in)
	}
}

func TestGuildChannelMentionGating(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	bot := h.fake.BotUser()

	h.post(&discordgo.Message{ChannelID: channelID, Content: "no mention here"})
	// @everyone and @here address the room, not the bot.
	h.post(&discordgo.Message{ChannelID: channelID, Content: "@everyone meeting now", MentionEveryone: true})
	h.post(&discordgo.Message{ChannelID: channelID, Content: "@here anyone?", MentionEveryone: true})
	if got := h.marker(t); len(got) != 0 {
		t.Fatalf("unmentioned message delivered: %+v", got)
	}

	id := h.post(&discordgo.Message{ChannelID: channelID, Content: "<@" + bot.ID + "> hello there",
		Mentions: []*discordgo.User{bot}, Member: &discordgo.Member{Nick: "Al"}})
	in := h.next(t)
	want := channels.Inbound{Address: channels.Address{Channel: "discord", AccountID: "default", ChatID: channelID}, MessageID: id,
		ChatType: channels.Channel, GuildID: guildID, SenderID: alice.ID, SenderName: "Al", CaseSensitive: true,
		Mentioned: true, Text: "hello there"}
	in.Time = time.Time{}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("got  %+v\nwant %+v", in, want)
	}

	// A role mention of the bot's role counts; another role does not.
	h.post(&discordgo.Message{ChannelID: channelID, Content: "<@&999> not us", MentionRoles: []string{"999"}})
	h.post(&discordgo.Message{ChannelID: channelID, Content: "<@&" + botRole + "> via role", MentionRoles: []string{botRole}})
	if in := h.next(t); in.Text != "via role" || !in.Mentioned {
		t.Fatalf("role mention: %+v", in)
	}
	// A reply to the bot counts.
	h.post(&discordgo.Message{ChannelID: channelID, Content: "and a reply", Type: discordgo.MessageTypeReply,
		MessageReference:  &discordgo.MessageReference{MessageID: "77"},
		ReferencedMessage: &discordgo.Message{ID: "77", Author: bot}})
	if in := h.next(t); in.Text != "and a reply" || in.ReplyToID != "77" || !in.Mentioned {
		t.Fatalf("reply to bot: %+v", in)
	}
}

func TestGuildChannelWithoutRequireMention(t *testing.T) {
	off := false
	h := startWith(t, Config{}, fakeOptions(), newRules(t, access.Config{RequireMention: &off}).options(Options{}))
	h.post(&discordgo.Message{ChannelID: channelID, Content: "plain"})
	if in := h.next(t); in.Text != "plain" || in.Mentioned {
		t.Fatalf("got %+v", in)
	}
}

func TestGuildRuleOverridesMention(t *testing.T) {
	off := false
	h := startWith(t, Config{}, fakeOptions(), newRules(t, access.Config{Groups: map[string]accessRule{threadID: {RequireMention: &off}}}).options(Options{}))
	h.post(&discordgo.Message{ChannelID: channelID, Content: "parent, unmentioned"})
	h.post(&discordgo.Message{ChannelID: threadID, Content: "thread, unmentioned"})
	if in := h.next(t); in.Text != "thread, unmentioned" {
		t.Fatalf("got %+v", in)
	}
}

func TestThread(t *testing.T) {
	fo := fakeOptions()
	h := start(t, Config{}, fo)
	bot := h.fake.BotUser()
	mention := "<@!" + bot.ID + ">"

	// A thread announced in GUILD_CREATE.
	h.post(&discordgo.Message{ChannelID: threadID, Content: mention + " in thread", Mentions: []*discordgo.User{bot}})
	in := h.next(t)
	if in.ChatID != channelID || in.ThreadID != threadID || in.ParentChatID != channelID || in.ChatType != channels.Channel || in.Text != "in thread" {
		t.Fatalf("thread message: %+v", in)
	}
	// A thread the gateway never announced is looked up over REST.
	h.fake.AddChannel(&discordgo.Channel{ID: "701", GuildID: guildID, Type: discordgo.ChannelTypeGuildPrivateThread, ParentID: channelID})
	h.post(&discordgo.Message{ChannelID: "701", GuildID: guildID, Content: mention + " hidden", Mentions: []*discordgo.User{bot}})
	if in := h.next(t); in.ChatID != channelID || in.ThreadID != "701" {
		t.Fatalf("REST thread: %+v", in)
	}
	// A thread created later arrives as THREAD_CREATE.
	h.fake.Dispatch("THREAD_CREATE", &discordgo.Channel{ID: "702", GuildID: guildID, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: channelID})
	h.post(&discordgo.Message{ChannelID: "702", Content: mention + " new", Mentions: []*discordgo.User{bot}})
	if in := h.next(t); in.ChatID != channelID || in.ThreadID != "702" {
		t.Fatalf("new thread: %+v", in)
	}

	// Replies go to the thread, the first part as a reply.
	err := h.a.Send(ctxT(t), channels.Outbound{Address: channels.Address{Channel: "discord", ChatID: channelID, ThreadID: threadID}, ReplyToID: in.MessageID, Text: "answer"})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := h.fake.WaitSent(ctxT(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].ChannelID != threadID || sent[0].Reference == nil || sent[0].Reference.MessageID != in.MessageID {
		t.Fatalf("sent %+v", sent[0])
	}
}

// TestForumPost: a forum post is a thread of the forum channel; its
// messages (the starter message has the post's id) are keyed like a
// thread's, under the forum, and replies go to the post.
func TestForumPost(t *testing.T) {
	fo := fakeOptions()
	fo.Guilds[0].Channels = append(fo.Guilds[0].Channels, &discordgo.Channel{ID: "610", Name: "help", Type: discordgo.ChannelTypeGuildForum})
	h := start(t, Config{}, fo)
	bot := h.fake.BotUser()
	h.fake.Dispatch("THREAD_CREATE", &discordgo.Channel{ID: "710", GuildID: guildID, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "610", Name: "how do I"})
	h.post(&discordgo.Message{ID: "710", ChannelID: "710", Content: "<@" + bot.ID + "> how do I deploy?", Mentions: []*discordgo.User{bot}})
	in := h.next(t)
	if in.ChatID != "610" || in.ThreadID != "710" || in.ParentChatID != "610" || in.ChatType != channels.Channel || in.GuildID != guildID {
		t.Fatalf("forum post message: %+v", in)
	}
}

func TestDirectMessage(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	cat := "https://cdn.discordapp.com/attachments/900/1/cat.png"
	id := h.post(&discordgo.Message{ChannelID: dmID, Content: "hi bot", Attachments: []*discordgo.MessageAttachment{
		{Filename: "cat.png", URL: cat, ContentType: "image/png", Size: 10}}})
	in := h.next(t)
	if in.ChatType != channels.Direct || in.ChatID != dmID || in.SenderID != alice.ID || !in.Mentioned ||
		in.GuildID != "" || in.MessageID != id || in.Text != "hi bot" || in.SenderName != "Alice" {
		t.Fatalf("dm: %+v", in)
	}
	if want := []channels.Attachment{{Kind: channels.MediaImage, MimeType: "image/png", Size: 10, FileName: "cat.png", Ref: cat}}; !reflect.DeepEqual(in.Attachments, want) {
		t.Fatalf("attachments %+v, want %+v", in.Attachments, want)
	}
}

func TestOwnAndBotMessagesIgnored(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	// The fake echoes the bot's posts back as MESSAGE_CREATE, like Discord.
	if err := h.a.Send(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: dmID}, Text: "echo me"}); err != nil {
		t.Fatal(err)
	}
	h.post(&discordgo.Message{ChannelID: dmID, Content: "from another bot", Author: &discordgo.User{ID: "43", Bot: true}})
	// A webhook's post (its author is no bot user) mentioning the bot.
	bot := h.fake.BotUser()
	h.post(&discordgo.Message{ChannelID: channelID, Content: "<@" + bot.ID + "> from a webhook", WebhookID: "55",
		Author: &discordgo.User{ID: "55", Username: "Deploy Hook"}, Mentions: []*discordgo.User{bot}})
	h.post(&discordgo.Message{ChannelID: dmID, Content: "system", Type: discordgo.MessageTypeChannelPinnedMessage})
	h.post(&discordgo.Message{ChannelID: dmID, Content: "<@" + h.fake.BotUser().ID + ">"}) // empty after stripping
	if got := h.marker(t); len(got) != 0 {
		t.Fatalf("ignored messages delivered: %+v", got)
	}
}

func TestReconnectResumeLosesNothing(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	// op 7: messages dispatched while the bot is away are replayed on resume.
	if err := h.fake.Reconnect(); err != nil {
		t.Fatal(err)
	}
	ids := []string{
		h.post(&discordgo.Message{ChannelID: dmID, Content: "while away 1"}),
		h.post(&discordgo.Message{ChannelID: dmID, Content: "while away 2"}),
	}
	if err := h.fake.WaitReady(ctxT(t), 1, 1); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, h.post(&discordgo.Message{ChannelID: dmID, Content: "after resume"}))
	// A dropped connection resumes too.
	if err := h.fake.Drop(); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, h.post(&discordgo.Message{ChannelID: dmID, Content: "while dropped"}))
	if err := h.fake.WaitReady(ctxT(t), 1, 2); err != nil {
		t.Fatal(err)
	}
	for i, want := range ids {
		if in := h.next(t); in.MessageID != want {
			t.Fatalf("message %d: got %s (%q), want %s", i, in.MessageID, in.Text, want)
		}
	}
	if identified, resumed := h.fake.Sessions(); identified != 1 || resumed != 2 {
		t.Fatalf("sessions: identified %d, resumed %d; want 1 and 2", identified, resumed)
	}
	select {
	case in := <-h.got:
		t.Fatalf("message delivered twice: %+v", in)
	default:
	}
}

func TestSendSplitsLongReplies(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	h := start(t, Config{}, fo)
	text := "intro\n```go\n" + strings.Repeat("fmt.Println(\"a fairly long line of code\")\n", 120) + "```\n" + strings.Repeat("tail ", 500)
	h.fake.RateLimitNext(1) // the first post gets a 429 that discordgo retries
	err := h.a.Send(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: channelID}, ReplyToID: "123", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	parts := channels.SplitMarkdown(text, MaxMessageLen)
	if len(parts) < 3 {
		t.Fatalf("only %d parts", len(parts))
	}
	sent := h.fake.Sent()
	if len(sent) != len(parts) {
		t.Fatalf("sent %d messages, want %d", len(sent), len(parts))
	}
	for i, s := range sent {
		if s.Content != parts[i] || s.ChannelID != channelID {
			t.Fatalf("part %d: %+v", i, s)
		}
		if (s.Reference != nil) != (i == 0) {
			t.Fatalf("part %d reference = %+v; only the first part replies", i, s.Reference)
		}
		if am := s.AllowedMentions; am == nil || len(am.Parse) != 1 || am.Parse[0] != discordgo.AllowedMentionTypeUsers {
			t.Fatalf("part %d allowed mentions = %+v", i, am)
		}
	}
	if sent[0].Reference.MessageID != "123" {
		t.Fatalf("reference = %+v", sent[0].Reference)
	}
}

func TestTyping(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	if err := h.a.Typing(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: channelID, ThreadID: threadID}}); err != nil {
		t.Fatal(err)
	}
	if got := h.fake.Typing(); len(got) != 1 || got[0] != threadID {
		t.Fatalf("typing in %v", got)
	}
	if err := h.a.Typing(ctxT(t), channels.Outbound{}); err == nil {
		t.Fatal("typing without a chat succeeded")
	}
}

func TestIntents(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	got := h.fake.Intents()
	for _, want := range []discordgo.Intent{discordgo.IntentsGuilds, discordgo.IntentsGuildMessages,
		discordgo.IntentsDirectMessages, discordgo.IntentMessageContent} {
		if got&want == 0 {
			t.Fatalf("intents %b lack %b", got, want)
		}
	}
}

func TestRunFailsOnBadToken(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "right"})
	defer fake.Close()
	a, err := New("default", Config{Token: "wrong"}, Options{HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(ctxT(t), func(context.Context, channels.Inbound) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "open gateway") {
		t.Fatalf("Run = %v, want an authentication error", err)
	}
}

func TestRunReturnsOnCancelWhileUnreachable(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "tok"})
	client := fake.Client()
	fake.Close() // nothing listens any more
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(context.Context, channels.Inbound) error { return nil }) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestRunTwice(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	err := h.a.Run(ctxT(t), func(context.Context, channels.Inbound) error { return nil })
	if err == nil {
		t.Fatal("second Run succeeded")
	}
}

func TestHandlerErrorRetried(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	calls := make(chan string, 8)
	n := 0
	go func() {
		done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			calls <- in.Text
			if n++; n == 1 {
				return errors.New("journal busy")
			}
			return nil
		})
	}()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "retry me"})
	for range 2 {
		if got := <-calls; got != "retry me" {
			t.Fatalf("handler got %q", got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ok", Config{Token: "x"}, ""},
		{"token file", Config{TokenFile: "/run/secrets/discord"}, ""},
		{"no token", Config{}, "token:"},
		{"both", Config{Token: "x", TokenFile: "y"}, "tokenFile:"},
		// The access rules (dmPolicy, guilds) are validated where configs
		// composes them with this Config: its TestAccountKeysStrict.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tt.want)) {
				t.Fatalf("Validate = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

// TestAPIBaseFromConfig: with apiBase set (an operator's proxy, or this
// fake end to end) and no injected client, REST and the gateway discovered
// through it reach that origin, and replies are posted there.
func TestAPIBaseFromConfig(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	defer fake.Close()
	a, err := New("default", Config{Token: "tok", APIBase: fake.URL()}, Options{Logger: zaptest.NewLogger(t), OpenTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(context.Context, channels.Inbound) error { return nil }) }()
	defer func() { cancel(); <-done }()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatalf("gateway not reached through apiBase: %v", err)
	}
	if err := a.Send(ctxT(t), channels.Outbound{Address: channels.Address{ChatID: "42"}, Text: "through the proxy"}); err != nil {
		t.Fatal(err)
	}
	if sent := fake.Sent(); len(sent) != 1 || sent[0].Content != "through the proxy" {
		t.Fatalf("sent %+v", sent)
	}
	if err := (Config{Token: "x", APIBase: "discord.example"}).Validate(); err == nil {
		t.Error("apiBase without a scheme accepted")
	}
}
