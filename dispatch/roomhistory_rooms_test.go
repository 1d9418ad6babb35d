package dispatch

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestRoomHistoryDiscordChannelAndThread: a Discord channel keeps its
// unmentioned messages, a thread below it keeps its own.
func TestRoomHistoryDiscordChannelAndThread(t *testing.T) {
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
	carol := &discordgo.User{ID: "7", Username: "carol"}
	chanKey, threadKey := "agent:main:discord:channel:900", "agent:main:discord:channel:900:thread:901"
	post := func(ch, text string, mention bool) {
		m := &discordgo.Message{ChannelID: ch, GuildID: "50", Author: carol, Content: text}
		if mention {
			m.Content = "<@" + dc.BotUser().ID + "> " + text
			m.Mentions = []*discordgo.User{dc.BotUser()}
		}
		dc.SendMessageCreate(m)
	}
	for i, text := range []string{"alpha", "beta", "gamma"} {
		post("900", text, false)
		eventually(t, "kept", func() bool { return r.mgr.History().Len(chanKey) == i+1 })
	}
	post("901", "in the thread", false)
	eventually(t, "kept in thread", func() bool { return r.mgr.History().Len(threadKey) == 1 })

	post("900", "thoughts?", true)
	got := lastUser(waitModel(t, model, 1))
	if !inOrder(got, historyHeader, "carol: alpha\n", "carol: beta\n", "carol: gamma\n", historyFooter, "[carol] thoughts?") ||
		strings.Contains(got, "in the thread") {
		t.Errorf("channel turn got:\n%s", got)
	}
	if _, err := dc.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	post("901", "and here?", true)
	got = lastUser(waitModel(t, model, 2))
	if !inOrder(got, historyHeader, "carol: in the thread\n", historyFooter, "[carol] and here?") || strings.Contains(got, "alpha") {
		t.Errorf("thread turn got:\n%s", got)
	}
}

// TestRoomHistoryCollectTurn: mentions merged into one collect turn carry
// the history block once, with what was said before them.
func TestRoomHistoryCollectTurn(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		queue: QueueConfig{Mode: "collect", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}})
	ctx := rigCtx(t)
	hold := make(chan struct{})
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Text: "first answer", Hold: hold}
		}
		return openaitest.Reply{Text: "answer"}
	})
	bot := "@" + tg.BotUserName() + " "
	say(tg, bob, "Bob", "early")
	say(tg, alice, "Alice", bot+"one")
	waitModel(t, model, 1) // the first turn runs (held)
	say(tg, bob, "Bob", "while you think 1")
	say(tg, bob, "Bob", "while you think 2")
	say(tg, alice, "Alice", bot+"two")
	last := say(tg, bob, "Bob", bot+"three")
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	close(hold)
	req := waitModel(t, model, 2)
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(userTexts(req), "\n")
	if n := strings.Count(all, historyHeader); n != 2 {
		t.Errorf("%d history blocks in the follow-up request, want 2 (one per turn):\n%s", n, all)
	}
	if !inOrder(all, "Bob: early\n", "[Alice] one", historyHeader, "Bob: while you think 1\n", "Bob: while you think 2\n",
		historyFooter, "[Alice] two", "[Bob] three") {
		t.Errorf("follow-up request:\n%s", all)
	}
	if len(model.Requests()) != 2 {
		t.Errorf("%d model calls, want 2 (the two mentions merged)", len(model.Requests()))
	}
}

// TestRoomHistoryAutomaticReset: an idle reset clears what was kept before
// the old session expired; what was said after that stays for the new one.
func TestRoomHistoryAutomaticReset(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	idle := 60
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		now: clock, reset: sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &idle}}})
	ctx := rigCtx(t)
	bot := "@" + tg.BotUserName() + " "
	at := func(from int64, name, text string, shift time.Duration) int {
		u, _ := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: from, FromName: name, Text: text,
			Extra: map[string]any{"date": time.Now().Add(shift).Unix()}})
		return u
	}
	at(alice, "Alice", bot+"hello", 0)
	waitModel(t, model, 1)
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	at(bob, "Bob", "said before the session expired", time.Minute)
	offset.Store(int64(2 * time.Hour))
	last := at(bob, "Bob", "said after it expired", 2*time.Hour-time.Minute)
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	at(alice, "Alice", bot+"what did I miss?", 2*time.Hour)
	req := waitModel(t, model, 2)
	u := userTexts(req)
	if len(u) != 1 {
		t.Fatalf("the request after the reset holds %d user messages, want 1 (a new session): %q", len(u), u)
	}
	if !inOrder(u[0], historyHeader, "Bob: said after it expired\n", historyFooter, "[Alice] what did I miss?") ||
		strings.Contains(u[0], "before the session expired") {
		t.Errorf("after the idle reset the model got:\n%s", u[0])
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := r.mgr.History().Len(tgKey); n != 0 {
		t.Errorf("%d messages kept after the turn", n)
	}
}

// TestRoomHistoryForumTopics: each forum topic keeps its own history.
func TestRoomHistoryForumTopics(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	const forum = int64(-100600)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, room: channels.DefaultRoom("telegram"),
		access: map[access.Account]access.Config{{Channel: "telegram", AccountID: "default"}: {GroupPolicy: access.GroupOpen}}})
	ctx := rigCtx(t)
	post := func(topic int, text string) int {
		u, _ := tg.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, ThreadID: topic, FromID: alice, FromName: "Alice", Text: text})
		return u
	}
	post(77, "about seventy-seven")
	last := post(78, "about seventy-eight")
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	k77, k78 := "agent:main:telegram:group:-100600:topic:77", "agent:main:telegram:group:-100600:topic:78"
	if a, b := r.mgr.History().Len(k77), r.mgr.History().Len(k78); a != 1 || b != 1 {
		t.Fatalf("kept %d in topic 77 and %d in topic 78, want 1 each", a, b)
	}
	post(77, "@"+tg.BotUserName()+" and?")
	got := lastUser(waitModel(t, model, 1))
	if !inOrder(got, historyHeader, "Alice: about seventy-seven\n", historyFooter, "[Alice] and?") || strings.Contains(got, "eight") {
		t.Errorf("topic 77 turn got:\n%s", got)
	}
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if n := r.mgr.History().Len(k78); n != 1 {
		t.Errorf("topic 78 keeps %d, want its 1 untouched", n)
	}
}

// TestRoomHistorySteer: a mention steered into a running turn carries no
// second history block; what was said meanwhile waits for the next turn.
func TestRoomHistorySteer(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram"),
		queue: QueueConfig{Mode: "steer", Debounce: time.Millisecond, Cap: 20, Drop: "summarize"}})
	ctx := rigCtx(t)
	hold := make(chan struct{})
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 { // a tool step, so the run calls the model again
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "sessions_list", Arguments: "{}"}}, Hold: hold}
		}
		return openaitest.Reply{Text: "answer"}
	})
	bot := "@" + tg.BotUserName() + " "
	say(tg, bob, "Bob", "before")
	say(tg, alice, "Alice", bot+"one")
	waitModel(t, model, 1)
	say(tg, bob, "Bob", "meanwhile")
	last := say(tg, alice, "Alice", bot+"also this")
	if err := tg.WaitConfirmed(ctx, last); err != nil {
		t.Fatal(err)
	}
	close(hold)
	req := waitModel(t, model, 2)
	u := userTexts(req)
	if len(u) != 2 || !inOrder(u[0], historyHeader, "Bob: before\n", historyFooter, "[Alice] one") || u[1] != "[Alice] also this" {
		t.Fatalf("steered run's second request: %q", u)
	}
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	say(tg, alice, "Alice", bot+"next")
	req = waitModel(t, model, 3)
	if got := lastUser(req); !inOrder(got, historyHeader, "Bob: meanwhile\n", historyFooter, "[Alice] next") {
		t.Errorf("next turn: %q", got)
	}
	if n := strings.Count(strings.Join(userTexts(req), "\n"), historyHeader); n != 2 {
		t.Errorf("%d history blocks, want one per turn (2)", n)
	}
}

// TestRoomHistoryResetElsewhere: a reset through the API or the CLI (which
// cannot reach the daemon's history) still drops what was said before it.
func TestRoomHistoryResetElsewhere(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram")})
	ctx := rigCtx(t)
	bot := "@" + tg.BotUserName() + " "
	dated := func(from int64, name, text string, shift time.Duration) int {
		u, _ := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: from, FromName: name, Text: text,
			Extra: map[string]any{"date": time.Now().Add(shift).Unix()}})
		return u
	}
	say(tg, alice, "Alice", bot+"hi")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.drained()
	if err := tg.WaitConfirmed(ctx, dated(bob, "Bob", "before the reset", -5*time.Second)); err != nil {
		t.Fatal(err)
	}
	key, _ := routing.Parse(tgKey)
	st, _ := r.mgr.Store("main")
	if _, err := st.Reset(ctx, key, sessions.ResetOptions{Manual: true, Reason: "api"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.WaitConfirmed(ctx, dated(bob, "Bob", "after the reset", 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	dated(alice, "Alice", bot+"so?", 3*time.Second)
	got := lastUser(waitModel(t, model, 2))
	if !inOrder(got, historyHeader, "Bob: after the reset\n", historyFooter, "[Alice] so?") || strings.Contains(got, "before the reset") {
		t.Errorf("after a reset elsewhere the model got:\n%s", got)
	}
}

// TestRoomHistoryFailedTurnConsumes: a turn whose model call fails after
// its input (with the history) reached the transcript still consumes the
// history: the next mention does not repeat it.
func TestRoomHistoryFailedTurnConsumes(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: channels.DefaultRoom("telegram")})
	ctx := rigCtx(t)
	model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply {
		if n == 0 {
			return openaitest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return openaitest.Reply{Text: "answer"}
	})
	bot := "@" + tg.BotUserName() + " "
	say(tg, bob, "Bob", "said once")
	say(tg, alice, "Alice", bot+"first")
	if _, err := tg.WaitSent(ctx, 1); err != nil { // the error notice
		t.Fatal(err)
	}
	r.drained()
	if n := r.mgr.History().Len(tgKey); n != 0 {
		t.Errorf("%d kept after the failed turn, want 0 (its input holds them)", n)
	}
	say(tg, alice, "Alice", bot+"second")
	req := waitModel(t, model, 2)
	if n := strings.Count(strings.Join(userTexts(req), "\n"), "Bob: said once"); n != 1 {
		t.Errorf("the kept message is in the next request %d times, want once", n)
	}
}
