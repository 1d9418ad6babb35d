package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// newSender is an adapter that is not running: Send works without Run.
func newSender(t *testing.T, srv *telegramtest.Server) *telegram.Adapter {
	return newAdapter(t, srv, baseConfig(srv), nil)
}

func TestSendTargetsChatAndTopic(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	outs := []channels.Outbound{
		{Address: channels.Address{ChatID: "111"}, Text: "**hi** <there>", ReplyToID: "55"},
		{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}, Text: "in topic"},
		{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "1", IsTopic: true}, Text: "in General"},
	}
	for _, out := range outs {
		if err := a.Send(ctx, out); err != nil {
			t.Fatalf("Send(%+v): %v", out, err)
		}
	}
	got := srv.Sent()
	for i := range got {
		got[i].MessageID = 0
	}
	want := []telegramtest.Sent{
		{Method: "sendMessage", ChatID: 111, Text: "<b>hi</b> &lt;there&gt;", ParseMode: "HTML", ReplyTo: 55},
		{Method: "sendMessage", ChatID: forum, ThreadID: 77, Text: "in topic", ParseMode: "HTML"},
		{Method: "sendMessage", ChatID: forum, ThreadID: 0, Text: "in General", ParseMode: "HTML"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

func TestTypingAndNotify(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	var _ channels.Typer = a
	if err := a.Typing(ctx, channels.Outbound{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Typing(ctx, channels.Outbound{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "1", IsTopic: true}}); err != nil {
		t.Fatal(err)
	}
	want := []telegramtest.Action{{ChatID: forum, ThreadID: 77, Action: "typing"}, {ChatID: forum, Action: "typing"}}
	if diff := cmp.Diff(want, srv.Actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if err := a.Notify(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: "Pairing code: `ABC123`", Failed: true}); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sent(); len(s) != 1 || s[0].Text != "Pairing code: <code>ABC123</code>" {
		t.Errorf("notify sent %+v", s)
	}
}

func TestLongReplySplitAcrossMessages(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	var b strings.Builder
	b.WriteString("Here is the program:\n\n```go\n")
	for i := 0; b.Len() < 9000; i++ {
		b.WriteString("fmt.Println(\"line <" + id(i) + "> & more\")\n")
	}
	b.WriteString("```\n\nThat is all.")
	if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: b.String(), ReplyToID: "9"}); err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent() // the fake rejects invalid HTML and texts over 4096
	if len(sent) < 3 {
		t.Fatalf("sent %d messages, want at least 3", len(sent))
	}
	var code strings.Builder
	for i, s := range sent {
		if wantReply := map[bool]int{true: 9, false: 0}[i == 0]; s.ReplyTo != wantReply {
			t.Errorf("message %d reply_to %d, want %d", i, s.ReplyTo, wantReply)
		}
		vis, err := telegramtest.ParseHTML(s.Text)
		if err != nil {
			t.Fatalf("message %d is not valid Telegram HTML: %v", i, err)
		}
		if n := len([]rune(vis)); n > telegram.MaxMessageLength {
			t.Errorf("message %d has %d characters", i, n)
		}
		body := s.Text
		if i < len(sent)-1 && !strings.HasSuffix(body, "</code></pre>") {
			t.Errorf("message %d does not close its code block: ...%s", i, body[max(0, len(body)-40):])
		}
		if i > 0 && !strings.HasPrefix(body, `<pre><code class="language-go">`) {
			t.Errorf("message %d does not reopen the code block: %s...", i, body[:40])
		}
		if start := strings.Index(body, `<code class="language-go">`); start >= 0 {
			start += len(`<code class="language-go">`)
			end := strings.Index(body, "</code></pre>")
			code.WriteString(body[start:end] + "\n")
		}
	}
	wantCode := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(
		b.String()[strings.Index(b.String(), "```go\n")+6:strings.LastIndex(b.String(), "```")], "&", "&amp;"), "<", "&lt;"), ">", "&gt;")
	if code.String() != wantCode {
		t.Errorf("code block content changed by splitting:\n got %d bytes\nwant %d bytes", code.Len(), len(wantCode))
	}
	if last := sent[len(sent)-1].Text; !strings.HasSuffix(last, "That is all.") {
		t.Errorf("last message %q", last[max(0, len(last)-40):])
	}
}

func TestEntityRejectionRetriedAsPlainText(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	srv.FailNext("sendMessage", telegramtest.Failure{Code: 400,
		Description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"})
	if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: "**bold** and `code`"}); err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent()
	if len(sent) != 1 || sent[0].ParseMode != "" || sent[0].Text != "**bold** and `code`" {
		t.Fatalf("sent %+v, want one plain-text message", sent)
	}
	if n := srv.Calls("sendMessage"); n != 2 {
		t.Errorf("sendMessage called %d times, want 2", n)
	}
}

func TestSendHonoursRetryAfter(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	srv.FailNext("sendMessage", telegramtest.Failure{Code: 429, RetryAfter: 1})
	start := time.Now()
	if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: "after the flood"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("sendMessage"); n != 2 {
		t.Errorf("sendMessage called %d times, want 2", n)
	}
	if len(srv.Sent()) != 1 {
		t.Errorf("sent %d messages, want 1", len(srv.Sent()))
	}
	t.Logf("waited %s for retry_after=1", time.Since(start))
}

func TestSendGivesUpOnLongRetryAfterAndCancel(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	srv.FailNext("sendMessage", telegramtest.Failure{Code: 429, RetryAfter: 3600})
	err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: "x"})
	var ae *telegram.APIError
	if !asAPIError(err, &ae) || ae.Code != 429 || ae.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want *APIError 429 retry after 1h", err)
	}
	// Cancellation interrupts a wait.
	srv.FailNext("sendMessage", telegramtest.Failure{Code: 429, RetryAfter: 30})
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { _ = srv.WaitCalls(ctx, "sendMessage", 2); cancel() }()
	if err := a.Send(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: "x"}); err == nil {
		t.Fatal("Send succeeded after cancel")
	}
}

func TestSendFollowsGroupMigration(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	const oldID, newID = int64(-4001), int64(-1004001)
	srv.Migrate(oldID, newID)
	ctx := testCtx(t)
	for i := 0; i < 2; i++ {
		if err := a.Send(ctx, channels.Outbound{Address: channels.Address{ChatID: id(int(oldID))}, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srv.Sent() {
		if s.ChatID != newID {
			t.Errorf("sent to %d, want %d", s.ChatID, newID)
		}
	}
	if n := srv.Calls("sendMessage"); n != 3 {
		t.Errorf("sendMessage called %d times, want 3 (one refused, then the mapping is known)", n)
	}
}

// TestMigratedGroupMovesChat: the migration's service messages become
// EventMoved events for the old chat (one each), the supergroup's messages
// carry its own id, a late message of the old group is reported under the
// new id, and a restart replays the known migration.
func TestMigratedGroupMovesChat(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	store := &telegram.MemoryOffsetStore{}
	rec := newRecorder()
	a := newAdapter(t, srv, baseConfig(srv), store)
	stop := run(t, a, rec.handle)
	const oldID, newID = int64(-4002), int64(-1004002)
	mention := "@" + srv.BotUserName() + " "
	srv.Migrate(oldID, newID)
	u, mid := srv.AddMessage(telegramtest.Message{ChatID: newID, FromID: bob, Text: mention + "still me"})
	waitConfirmed(t, srv, u)
	u, lateID := srv.AddMessage(telegramtest.Message{ChatID: oldID, FromID: bob, Text: mention + "late"})
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 4 {
		t.Fatalf("accepted %d inbounds, want 2 moves and 2 messages: %+v", len(got), got)
	}
	for _, in := range got[:2] {
		if in.Event == nil || in.Event.Kind != channels.EventMoved || in.ChatID != id(int(oldID)) || in.Event.ChatID != id(int(newID)) {
			t.Errorf("service message gave %+v (event %+v), want a move of %d to %d", in, in.Event, oldID, newID)
		}
	}
	if m := got[2]; m.Event != nil || m.ChatID != id(int(newID)) || m.MessageID != id(mid) {
		t.Errorf("supergroup message = chat %s message %s, want chat %d message %d", m.ChatID, m.MessageID, newID, mid)
	}
	if m := got[3]; m.ChatID != id(int(newID)) || m.MessageID != "m"+id(lateID) {
		t.Errorf("late message of the old group = chat %s message %s, want chat %d message m%d", m.ChatID, m.MessageID, newID, lateID)
	}
	if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: id(int(oldID))}, Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sent(); len(s) != 1 || s[0].ChatID != newID {
		t.Errorf("sent %+v, want chat %d", s, newID)
	}
	m, _ := store.LoadMigrations(testCtx(t), "default")
	if m[oldID] != newID {
		t.Errorf("migration not persisted: %v", m)
	}
	stop()

	// A restart hands the known migration over again.
	again := newRecorder()
	b := newAdapter(t, srv, baseConfig(srv), store)
	run(t, b, again.handle)
	again.waitCalls(t, 1)
	if in := again.accepted()[0]; in.Event == nil || in.Event.Kind != channels.EventMoved || in.Event.ChatID != id(int(newID)) {
		t.Errorf("first inbound after a restart = %+v, want the replayed move", in)
	}
}

// TestRateLimitReturnedToAParkingCaller: a chunk send whose caller waits
// rate limits out itself (the outbox on a lane, channels.ReturnRateLimits)
// gets the 429 back at once with its retry_after: the adapter does not
// wait it out in place, where the wait would hold the caller's
// concurrency slot and other chats' replies would queue behind it.
func TestRateLimitReturnedToAParkingCaller(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	srv.FailNext("sendMessage", telegramtest.Failure{Code: 429, RetryAfter: 1})
	ctx := channels.ReturnRateLimits(testCtx(t))
	_, err := a.SendChunkID(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}}, 0, "hello")
	if got := channels.RetryAfter(err); got != time.Second {
		t.Fatalf("SendChunkID: err %v, RetryAfter %v; want the 429 with retry_after 1s", err, got)
	}
	if n := srv.Calls("sendMessage"); n != 1 {
		t.Errorf("sendMessage called %d times, want 1 (no wait, no retry)", n)
	}
	if len(srv.Sent()) != 0 {
		t.Errorf("sent %d messages, want none", len(srv.Sent()))
	}
}

// A reply part whose Markdown renders to no visible text (an empty code
// block, a lone ">") is refused by Telegram as an empty message: it goes
// as plain text like a part whose entities were rejected, and the parts
// after it follow. Before, the refusal buried the rest of the reply (and
// disabled a scheduled job whose reply it was: the room looked refusing).
func TestChunkWithoutVisibleTextSentAsPlainText(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	for _, md := range []string{"```\n```", ">"} {
		if err := a.Send(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}, Text: md}); err != nil {
			t.Fatalf("Send(%q): %v", md, err)
		}
	}
	sent := srv.Sent()
	if len(sent) != 2 || sent[0].Text != "```\n```" || sent[0].ParseMode != "" || sent[1].Text != ">" {
		t.Fatalf("sent %+v, want the two texts as plain text", sent)
	}
	// A streamed draft that shows only an opened code block so far.
	id, err := a.SendDraft(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}}, "```go\n")
	if err != nil {
		t.Fatalf("SendDraft: %v", err)
	}
	if err := a.EditDraft(ctx, channels.Outbound{Address: channels.Address{ChatID: "111"}}, id, ">"); err != nil {
		t.Fatalf("EditDraft: %v", err)
	}
}
