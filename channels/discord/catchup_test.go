package discord

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// memCursors is a CursorStore in memory, shared by successive adapters as
// the daemon's storage is by successive processes.
type memCursors struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func (c *memCursors) CursorsOf(_ context.Context, scope string) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.m[scope] {
		out[k] = v
	}
	return out, nil
}

func (c *memCursors) SetCursor(_ context.Context, scope, name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]map[string]string{}
	}
	if c.m[scope] == nil {
		c.m[scope] = map[string]string{}
	}
	c.m[scope][name] = value
	return nil
}

// runProcess runs one adapter ("process") on fake with the cursors store
// until the returned stop is called (stop waits for Run to return).
func runProcess(t *testing.T, fake *discordtest.Server, store CursorStore) (<-chan channels.Inbound, func()) {
	t.Helper()
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: store})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan channels.Inbound, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			got <- in
			return nil
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return got, stop
}

func nextIn(t *testing.T, got <-chan channels.Inbound) channels.Inbound {
	t.Helper()
	select {
	case in := <-got:
		return in
	case <-time.After(15 * time.Second):
		t.Fatal("no message delivered")
	}
	return channels.Inbound{}
}

// TestCatchUpAfterDowntime: messages said while no process was connected
// (Discord does not queue them for a bot that identifies afresh) reach the
// next process from the channel history, in order, once each, with their
// guild and mention as if live; messages older than the catch-up age are
// left, and nothing the first process handled comes again.
func TestCatchUpAfterDowntime(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	store := &memCursors{}
	bot := fake.BotUser()
	mention := func(text string) *discordgo.Message {
		return &discordgo.Message{ChannelID: channelID, Author: alice, Content: "<@" + bot.ID + "> " + text, Mentions: []*discordgo.User{bot}}
	}

	got, stop := runProcess(t, fake, store)
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "before dm"})
	fake.SendMessageCreate(mention("before guild"))
	for range 2 {
		nextIn(t, got)
	}
	stop() // its last cursor write is done when Run returns
	if err := fake.WaitDisconnected(ctxT(t)); err != nil {
		t.Fatal(err)
	}

	stale := &discordgo.Message{ChannelID: dmID, Author: alice, Content: "stale", Timestamp: time.Now().Add(-48 * time.Hour)}
	fake.SendMessageCreate(stale)
	down1 := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "while down 1"})
	down2 := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "while down 2"})
	down3 := fake.SendMessageCreate(mention("while down 3"))

	got2, _ := runProcess(t, fake, store)
	if err := fake.WaitReady(ctxT(t), 2, 0); err != nil {
		t.Fatal(err)
	}
	// A message posted now may come twice, live and from the history (if
	// the catch-up reads the channel after it): the journal drops the
	// second in the daemon; here it is only skipped.
	live := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "live"})
	var dm, guild []string
	for sawLive := false; !sawLive || len(guild) == 0; {
		in := nextIn(t, got2)
		switch {
		case in.MessageID == live:
			sawLive = true
		case in.ChatID == dmID && in.ChatType == channels.Direct:
			dm = append(dm, in.MessageID)
		case in.ChatID == channelID && in.GuildID == guildID && in.ChatType == channels.Channel && in.Mentioned && in.Text == "while down 3":
			guild = append(guild, in.MessageID)
		default:
			t.Fatalf("caught up %+v", in)
		}
	}
	if len(dm) != 2 || dm[0] != down1 || dm[1] != down2 {
		t.Errorf("direct messages caught up %v, want [%s %s] (not the stale %s, not the one handled before)", dm, down1, down2, stale.ID)
	}
	if len(guild) != 1 || guild[0] != down3 {
		t.Errorf("guild messages caught up %v, want [%s]", guild, down3)
	}
	if fake.HistoryReads() == 0 {
		t.Error("the history was never read")
	}
}

// TestCatchUpCursorParse: cursors round-trip their stored form, refuse a
// malformed one, and keep a channel's newest id, compared as a number.
func TestCatchUpCursorParse(t *testing.T) {
	c := cursor{id: "123456789012345678", at: time.Unix(1700000000, 0)}
	back, ok := parseCursor(c.String())
	if !ok || back.id != c.id || !back.at.Equal(c.at) {
		t.Fatalf("round trip of %q: %+v %v", c.String(), back, ok)
	}
	for _, bad := range []string{"", "abc 1", "12", "12 x", "../x 1"} {
		if _, ok := parseCursor(bad); ok {
			t.Errorf("parseCursor(%q) accepted", bad)
		}
	}
	var s seenCursors
	s.note("c", "10", time.Now())
	s.note("c", "9", time.Now()) // older: kept at 10
	s.note("c", "100", time.Now())
	if got := s.takeDirty()["c"].id; got != "100" {
		t.Errorf("cursor %s, want the newest id 100 (ids compare as numbers)", got)
	}
	if d := s.takeDirty(); len(d) != 0 {
		t.Errorf("dirty after take: %v", d)
	}
}

// slowCursors is memCursors whose writes wait for release (a storage
// that is slow, or failing and retried).
type slowCursors struct {
	memCursors
	release chan struct{}
}

func (c *slowCursors) SetCursor(ctx context.Context, scope, name, value string) error {
	select {
	case <-c.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.memCursors.SetCursor(ctx, scope, name, value)
}

// TestResumeRefusedCatchesUp: when Discord refuses to resume the session
// after a drop (op 9: the events of the gap are gone), the messages said
// in the gap are caught up from the history, also in a channel this
// process heard first and whose cursor is not stored yet (a slow or
// failing cursor write).
func TestResumeRefusedCatchesUp(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	store := &slowCursors{release: make(chan struct{})}
	defer close(store.release)
	got, _ := runProcess(t, fake, store)
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	first := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "first"})
	if in := nextIn(t, got); in.MessageID != first {
		t.Fatalf("got %+v", in)
	}
	fake.InvalidateSession()
	if err := fake.Drop(); err != nil {
		t.Fatal(err)
	}
	gap, live := fake.SendMessageCreateLive(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "in the gap"})
	if live != 0 {
		t.Fatalf("the gap's message went to session %d", live)
	}
	if err := fake.WaitReady(ctxT(t), 2, 0); err != nil {
		t.Fatal(err)
	}
	if in := nextIn(t, got); in.MessageID != gap {
		t.Fatalf("got %+v, want the gap's message %s", in, gap)
	}
}

// TestResumeWithCatchUpHandsEachMessageOnce: after a reconnect that
// resumes, the messages of the gap come twice to the adapter (replayed by
// the resume and read from the history by the catch-up): each reaches
// the handler once, in order. (The journal drops a second copy of a
// journaled message, but not everything is journaled: an unaddressed
// message kept as room history, a refused one answered with a notice.)
func TestResumeWithCatchUpHandsEachMessageOnce(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	got, _ := runProcess(t, fake, &memCursors{})
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	first := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "first"})
	if in := nextIn(t, got); in.MessageID != first {
		t.Fatalf("got %+v", in)
	}
	if err := fake.Reconnect(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "away 1"}),
		fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "away 2"}),
	}
	if err := fake.WaitReady(ctxT(t), 1, 1); err != nil {
		t.Fatal(err)
	}
	// Two markers: everything queued before the second one was posted is
	// handled before it.
	want = append(want, fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "marker 1"}))
	var ids []string
	for in := nextIn(t, got); in.MessageID != want[len(want)-1]; in = nextIn(t, got) {
		ids = append(ids, in.MessageID)
	}
	ids = append(ids, want[len(want)-1])
	last := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "marker 2"})
	for in := nextIn(t, got); in.MessageID != last; in = nextIn(t, got) {
		ids = append(ids, in.MessageID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("handled %v, want %v once each", ids, want)
	}
}

// TestCatchUpThreadsOpenedWhileDown: a thread or forum post opened while
// no process was connected has no cursor (nothing was heard in it), yet
// its messages are caught up like a known channel's: the next process
// finds it in GUILD_CREATE with messages newer than the last it heard.
// Before, such a mention (a forum post asking the bot during a restart)
// was never answered. So is a channel quiet for longer than the catch-up
// age before the restart (its cursor too old to be read) that got a
// mention while down. A channel hidden from the bot is not asked for.
func TestCatchUpThreadsOpenedWhileDown(t *testing.T) {
	fo := fakeOptions()
	const everyone = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages | discordgo.PermissionReadMessageHistory
	fo.Guilds[0].Roles = []*discordgo.Role{{ID: guildID, Name: "@everyone", Permissions: everyone}}
	fo.Guilds[0].Channels = append(fo.Guilds[0].Channels, &discordgo.Channel{ID: "610", Name: "help", Type: discordgo.ChannelTypeGuildForum},
		&discordgo.Channel{ID: "620", Name: "quiet", Type: discordgo.ChannelTypeGuildText},
		&discordgo.Channel{ID: "630", Name: "staff", Type: discordgo.ChannelTypeGuildText, PermissionOverwrites: []*discordgo.PermissionOverwrite{
			{ID: guildID, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionViewChannel}}})
	fake := discordtest.New(fo)
	defer fake.Close()
	store := &memCursors{}
	bot := fake.BotUser()
	mention := func(channel, text string) *discordgo.Message {
		return &discordgo.Message{ChannelID: channel, Author: alice, Content: "<@" + bot.ID + "> " + text, Mentions: []*discordgo.User{bot}}
	}

	got, stop := runProcess(t, fake, store)
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.SendMessageCreate(mention(channelID, "before"))
	nextIn(t, got)
	stop()
	if err := fake.WaitDisconnected(ctxT(t)); err != nil {
		t.Fatal(err)
	}

	fake.Dispatch("THREAD_CREATE", &discordgo.Channel{ID: "711", GuildID: guildID, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: channelID, Name: "t"})
	inThread := fake.SendMessageCreate(mention("711", "in a new thread"))
	fake.Dispatch("THREAD_CREATE", &discordgo.Channel{ID: "712", GuildID: guildID, Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "610", Name: "how do I"})
	inPost := fake.SendMessageCreate(mention("712", "in a new forum post"))
	old := time.Now().Add(-48 * time.Hour)
	if err := store.SetCursor(ctxT(t), "discord:default", "620", cursor{id: snowflakeAt(old), at: old}.String()); err != nil {
		t.Fatal(err)
	}
	inQuiet := fake.SendMessageCreate(mention("620", "in a quiet channel"))
	fake.SendMessageCreate(mention("630", "hidden from the bot")) // the fake would show it; Discord answers 403

	got2, _ := runProcess(t, fake, store)
	if err := fake.WaitReady(ctxT(t), 2, 0); err != nil {
		t.Fatal(err)
	}
	live := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "live"})
	caught := map[string]channels.Inbound{}
	for in := nextIn(t, got2); in.MessageID != live; in = nextIn(t, got2) {
		caught[in.MessageID] = in
	}
	if in, ok := caught[inThread]; !ok || in.ThreadID != "711" || in.ChatID != channelID || in.GuildID != guildID || !in.Mentioned {
		t.Errorf("message of the new thread caught up as %+v (found %v)", in, ok)
	}
	if in, ok := caught[inPost]; !ok || in.ThreadID != "712" || in.ChatID != "610" {
		t.Errorf("message of the new forum post caught up as %+v (found %v)", in, ok)
	}
	if in, ok := caught[inQuiet]; !ok || in.ChatID != "620" || in.ThreadID != "" {
		t.Errorf("message of the quiet channel caught up as %+v (found %v)", in, ok)
	}
	if len(caught) != 3 {
		t.Errorf("caught up %d messages, want the three: %+v", len(caught), caught)
	}
}
