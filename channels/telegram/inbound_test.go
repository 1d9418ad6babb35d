package telegram_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

const (
	alice = int64(111)
	bob   = int64(222)
	group = int64(-100500)
	forum = int64(-100777)
)

func id(n int) string { return strconv.Itoa(n) }

func TestDirectMessage(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	u, mid := srv.AddMessage(telegramtest.Message{ChatID: alice, FromName: "Alice", Text: "hello there"})
	waitConfirmed(t, srv, u)
	want := []channels.Inbound{{
		Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "111"}, MessageID: id(mid), ChatType: channels.Direct,
		SenderID: "111", SenderName: "Alice", CaseSensitive: true, Mentioned: true, Text: "hello there",
	}}
	if diff := cmp.Diff(want, rec.accepted()); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
}

func TestGroupMentionGating(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	bot := srv.BotUserName()
	g := func(text string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, FromName: "Bob", Text: text}
	}
	type tc struct {
		name string
		msg  telegramtest.Message
		text string // "" = dropped
	}
	replyToBot := g("what do you mean?")
	replyToBot.ReplyTo = &telegramtest.Reply{MessageID: 5, FromID: srv.BotID(), Text: "an answer"}
	replyToOther := g("me too")
	replyToOther.ReplyTo = &telegramtest.Reply{MessageID: 6, FromID: alice, Text: "I agree"}
	tests := []tc{
		{"no mention", g("just chatting"), ""},
		{"mention stripped", g("@" + bot + " what is 2+2?"), "what is 2+2?"},
		{"mention in the middle", g("hey @" + bot + ", summarise"), "hey summarise"},
		{"mention case-insensitive", g("@GATEWAY_TEST_BOT hi"), "hi"},
		{"mention after emoji (UTF-16 offsets)", g("😀🎉 @" + bot + " party?"), "😀🎉 party?"},
		{"other user mentioned", g("@someone_else look"), ""},
		{"reply to the bot", replyToBot, "what do you mean?"},
		{"reply to someone else", replyToOther, ""},
		{"command for this bot", g("/status@" + bot), "/status"},
		{"command with args", g("/new@" + bot + " gpt-4"), "/new gpt-4"},
		{"command for every bot", g("/help"), "/help"},
		{"command for this bot in another case", g("/NEW@" + strings.ToUpper(bot) + " hi"), "/NEW hi"},
		{"command for another bot", g("/status@other_bot"), ""},
		{"reset for another bot", g("/new@other_bot"), ""},
		{"mention then command", g("@" + bot + " /reset@" + bot), "/reset"},
		{"mention, then command with args", g("@" + bot + ", /new gpt-4"), "/new gpt-4"},
		{"command later in the text", g("@" + bot + " what does /new do?"), "what does /new do?"},
	}
	var last int
	wantMsgs := map[string]string{}
	for _, tt := range tests {
		u, mid := srv.AddMessage(tt.msg)
		last = u
		if tt.text != "" {
			wantMsgs[id(mid)] = tt.name
		}
		_ = u
	}
	waitConfirmed(t, srv, last)
	got := rec.accepted()
	i := 0
	for _, tt := range tests {
		if tt.text == "" {
			continue
		}
		if i >= len(got) {
			t.Errorf("%s: not delivered", tt.name)
			continue
		}
		in := got[i]
		i++
		if in.Text != tt.text || !in.Mentioned || in.ChatType != channels.Group || in.ChatID != id(int(group)) ||
			in.SenderID != "222" || wantMsgs[in.MessageID] != tt.name {
			t.Errorf("%s: got %+v, want text %q mentioned group chat", tt.name, in, tt.text)
		}
	}
	if len(got) != i {
		t.Errorf("delivered %d messages, want %d: %+v", len(got), i, got)
	}
	if got := rec.callCount(); got != i {
		t.Errorf("handler called %d times, want %d (unmentioned messages must not reach it)", got, i)
	}
}

func TestGroupWithoutRequireMention(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	// requireMention: false, as the daemon hands in the access policy's
	// answer.
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{
		Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		MentionRequired: func(channels.Inbound) bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, a, rec.handle)
	u := srv.Group(group, bob, "plain chatter")
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 1 || got[0].Mentioned || got[0].Text != "plain chatter" {
		t.Fatalf("got %+v, want one unmentioned message", got)
	}
}

func TestForumTopics(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	mention := "@" + srv.BotUserName() + " "
	inTopic := telegramtest.Message{ChatID: forum, Forum: true, ThreadID: 77, FromID: bob, Text: mention + "topic question"}
	_, m1 := srv.AddMessage(inTopic)
	_, m2 := srv.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, FromID: bob, Text: mention + "general question"})
	// The bot created topic 88: its root message is not a reply to the bot.
	u3, _ := srv.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, ThreadID: 88, TopicCreatorID: srv.BotID(),
		FromID: bob, Text: "no mention in the bot's topic"})
	reply := telegramtest.Message{ChatID: forum, Forum: true, ThreadID: 88, FromID: bob, Text: "answering the bot",
		ReplyTo: &telegramtest.Reply{MessageID: 4000, FromID: srv.BotID(), Text: "bot said"}}
	u4, m4 := srv.AddMessage(reply)
	waitConfirmed(t, srv, u4)
	_ = u3
	base := channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(forum)), IsTopic: true}, ChatType: channels.Group, SenderID: "222", SenderName: "User 222", CaseSensitive: true, Mentioned: true}
	want := []channels.Inbound{base, base, base}
	want[0].MessageID, want[0].ThreadID, want[0].Text = id(m1), "77", "topic question"
	want[1].MessageID, want[1].ThreadID, want[1].Text = id(m2), "1", "general question"
	want[2].MessageID, want[2].ThreadID, want[2].Text, want[2].ReplyToID = id(m4), "88", "answering the bot", "4000"
	if diff := cmp.Diff(want, rec.accepted()); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
}

// TestPrivateChatTopics: a thread in a private chat with topics is its own
// conversation (ThreadID set, not a forum topic); the plain DM stays apart.
func TestPrivateChatTopics(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	_, m1 := srv.AddMessage(telegramtest.Message{ChatID: alice, ThreadID: 5, Text: "in a thread"})
	u2, m2 := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "plain"})
	waitConfirmed(t, srv, u2)
	got := rec.accepted()
	if len(got) != 2 || got[0].MessageID != id(m1) || got[0].ThreadID != "5" || got[0].IsTopic ||
		got[1].MessageID != id(m2) || got[1].ThreadID != "" {
		t.Fatalf("inbound %+v", got)
	}
}

func TestPlaceholdersAttachmentsAndEdits(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	msgs := []struct {
		msg  telegramtest.Message
		want string // text, then the attachment's kind:ref:name
	}{
		{telegramtest.Message{ChatID: alice, Media: "photo", Caption: "look at this"}, "look at this|image:p1:photo.jpg"},
		{telegramtest.Message{ChatID: alice, Media: "sticker", StickerEmoji: "😀"}, "[sticker 😀]|"},
		{telegramtest.Message{ChatID: alice, Media: "voice"}, "|voice:v1:voice.ogg"},
		{telegramtest.Message{ChatID: alice, Media: "document", Caption: "the report"}, "the report|document:d1:report.pdf"},
		{telegramtest.Message{ChatID: alice, Media: "video"}, "|video:f1:video"},
		// An edit is handed on as an event: the dispatcher drops it unless
		// the room hears edits (off by default).
		{telegramtest.Message{ChatID: alice, Text: "fixed typo", Edited: true}, "fixed typo|+edit"},
	}
	var last int
	var want []string
	for _, m := range msgs {
		last, _ = srv.AddMessage(m.msg)
		if m.want != "" {
			want = append(want, m.want)
		}
	}
	waitConfirmed(t, srv, last)
	var got []string
	for _, in := range rec.accepted() {
		s := in.Text + "|"
		for _, a := range in.Attachments {
			s += string(a.Kind) + ":" + a.Ref + ":" + a.FileName
		}
		if in.Event != nil {
			s += "+" + in.Event.Kind
		}
		got = append(got, s)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}

func TestMentionInCaptionOfGroupPhoto(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	u, _ := srv.AddMessage(telegramtest.Message{ChatID: group, FromID: bob, Media: "photo",
		Caption: "@" + srv.BotUserName() + " what is this?"})
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 1 || got[0].Text != "what is this?" || len(got[0].Attachments) != 1 || !got[0].Mentioned {
		t.Fatalf("got %+v", got)
	}
}

// TestReplyThreadInGroupIsNotATopic: outside topics a supergroup's reply
// carries message_thread_id (the reply thread's root) but no
// is_topic_message: it belongs to the group's conversation, not to a
// topic, and the answer goes to the group without message_thread_id,
// quoting the reply. In a forum's General topic such a reply belongs to
// General (tdlib/telegram-bot-api#447: answering it with that
// message_thread_id fails with "message thread not found").
func TestReplyThreadInGroupIsNotATopic(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, rec := startPolling(t, srv, baseConfig(srv))
	u, mid := srv.AddMessage(telegramtest.Message{ChatID: group, FromID: bob, Text: "and then?",
		ReplyTo: &telegramtest.Reply{MessageID: 900, FromID: srv.BotID(), Text: "an answer"}})
	waitConfirmed(t, srv, u)
	raw, _ := json.Marshal(srv.MessageObject(telegramtest.Message{ChatID: group, FromID: bob, Text: "x",
		ReplyTo: &telegramtest.Reply{MessageID: 900, FromID: srv.BotID()}}, 1))
	if !strings.Contains(string(raw), `"message_thread_id":900`) {
		t.Fatalf("the fake's reply in a supergroup has no message_thread_id: %s", raw)
	}
	got := rec.accepted()
	if len(got) != 1 || got[0].ThreadID != "" || got[0].IsTopic || got[0].ReplyToID != "900" || !got[0].Mentioned {
		t.Fatalf("inbound %+v, want the group's conversation (no thread), a reply to the bot's 900", got)
	}
	out := channels.Outbound{Address: got[0].Address, ReplyToID: got[0].MessageID, Text: "then this"}
	if err := a.Send(testCtx(t), out); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sent(); len(s) != 1 || s[0].ChatID != group || s[0].ThreadID != 0 || s[0].ReplyTo != mid {
		t.Errorf("sent %+v, want chat %d, no thread, quoting %d", s, group, mid)
	}

	u, mid = srv.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, FromID: bob, Text: "in General",
		ReplyTo: &telegramtest.Reply{MessageID: 901, FromID: srv.BotID(), Text: "an answer"}})
	waitConfirmed(t, srv, u)
	got = rec.accepted()
	if len(got) != 2 || got[1].ThreadID != "1" || !got[1].IsTopic || got[1].ReplyToID != "901" {
		t.Fatalf("inbound %+v, want General (topic 1), a reply to the bot's 901", got[1:])
	}
	out = channels.Outbound{Address: got[1].Address, ReplyToID: got[1].MessageID, Text: "General answer"}
	if err := a.Send(testCtx(t), out); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sent(); len(s) != 2 || s[1].ChatID != forum || s[1].ThreadID != 0 || s[1].ReplyTo != mid {
		t.Errorf("sent %+v, want chat %d, no thread (General), quoting %d", s[1:], forum, mid)
	}
}

// Telegram dates an edit in whole seconds: two edits of one message within
// a second (a typo fixed twice) carried the same stamp, so the dispatcher
// journaled the second as a duplicate of the first and the agent never saw
// the final text. Each edit update has its own stamp; a redelivery of one
// keeps it.
func TestEditsWithinOneSecondAreDistinct(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	rec := newRecorder()
	failed := false
	var stamps []string // guarded by rec.mu (fail runs under it)
	rec.fail = func(in channels.Inbound, _ int) error {
		if in.Event != nil {
			stamps = append(stamps, in.Event.Stamp)
		}
		if in.Text == "teh cat" && !failed {
			failed = true
			return errJournalDown
		}
		return nil
	}
	run(t, newAdapter(t, srv, baseConfig(srv), nil), rec.handle)
	var last int
	for _, text := range []string{"teh cat", "the cat"} {
		obj := srv.MessageObject(telegramtest.Message{ChatID: alice, Text: text}, 900)
		obj["edit_date"] = 1767225600
		last = srv.AddUpdate(map[string]any{"edited_message": obj})
	}
	waitConfirmed(t, srv, last)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(stamps) != 3 || !failed {
		t.Fatalf("edit stamps %q, want three deliveries (one retried)", stamps)
	}
	if stamps[0] != stamps[1] {
		t.Errorf("a redelivered edit changed its stamp: %q then %q", stamps[0], stamps[1])
	}
	if stamps[1] == stamps[2] {
		t.Errorf("two edits share the stamp %q: the second is a duplicate to the dispatcher", stamps[1])
	}
}

// A forum's topic service messages (created, renamed, closed, reopened)
// carry no text: they never reach the Handler, even where every message
// does (requireMention off), and the next message of the topic does.
func TestForumTopicServiceMessagesIgnored(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{
		Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		MentionRequired: func(channels.Inbound) bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, a, rec.handle)
	for _, extra := range []map[string]any{
		{"forum_topic_created": map[string]any{"name": "Releases", "icon_color": 7322096}},
		{"forum_topic_edited": map[string]any{"name": "Releases 2"}},
		{"forum_topic_closed": map[string]any{}},
		{"forum_topic_reopened": map[string]any{}},
	} {
		srv.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, ThreadID: 91, FromID: bob, Extra: extra})
	}
	u, mid := srv.AddMessage(telegramtest.Message{ChatID: forum, Forum: true, ThreadID: 91, FromID: bob, Text: "shipped"})
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 1 || got[0].MessageID != id(mid) || got[0].ThreadID != "91" || !got[0].IsTopic {
		t.Fatalf("accepted %+v, want only the topic's message", got)
	}
}
