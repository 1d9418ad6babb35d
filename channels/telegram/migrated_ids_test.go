package telegram_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestMigratedGroupMessagesAreNotQuoted: a supergroup numbers its
// messages afresh, so an id of the group it replaced names another
// message there, or none. A reply queued for the group before its upgrade
// (sent on when Telegram answers migrate_to_chat_id, or once the move is
// known) and a reply to a late message of the group (its id prefixed "m")
// go to the supergroup quoting nothing, and no reaction is set on such a
// message; a message of the supergroup itself is still quoted.
func TestMigratedGroupMessagesAreNotQuoted(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	const oldID, newID = int64(-4003), int64(-1004003)
	srv.Migrate(oldID, newID)
	ctx := testCtx(t)
	send := func(chat int64, replyTo string) {
		t.Helper()
		out := channels.Outbound{Address: channels.Address{ChatID: id(int(chat))}, Text: "answer to " + replyTo, ReplyToID: replyTo}
		if err := a.Send(ctx, out); err != nil {
			t.Fatalf("Send replying to %s: %v", replyTo, err)
		}
	}
	send(oldID, "57")  // queued before the upgrade: Telegram answers migrate_to_chat_id
	send(oldID, "58")  // queued before the upgrade, sent once the move is known
	send(newID, "m59") // a late message of the old group
	send(newID, "60")  // the supergroup's own message
	type sent struct {
		Chat    int64
		ReplyTo int
	}
	var got []sent
	for _, s := range srv.Sent() {
		got = append(got, sent{s.ChatID, s.ReplyTo})
	}
	want := []sent{{newID, 0}, {newID, 0}, {newID, 0}, {newID, 60}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	for _, msg := range []string{"58", "m59"} {
		target := channels.Address{ChatID: id(int(oldID))}
		if msg == "m59" {
			target.ChatID = id(int(newID))
		}
		_ = a.React(ctx, channels.Reaction{Target: channels.Outbound{Address: target}, MessageID: msg, Emoji: "👀"})
	}
	if n := srv.Calls("setMessageReaction"); n != 0 {
		t.Errorf("setMessageReaction called %d times, want 0: the supergroup has no such messages", n)
	}

	// An adapter that learns of the upgrade from Telegram's answer to a
	// reaction or to the edit of a draft in the group does not aim them
	// at the supergroup: the draft's text goes there as a new message.
	fresh := newSender(t, srv)
	old := channels.Address{ChatID: id(int(oldID))}
	if err := fresh.React(ctx, channels.Reaction{Target: channels.Outbound{Address: old}, MessageID: "61", Emoji: "👀"}); err == nil {
		t.Error("React on a message of the upgraded group succeeded")
	}
	if r := srv.Reactions(); len(r) != 0 {
		t.Errorf("reactions set %+v, want none", r)
	}
	fresh = newSender(t, srv)
	before := len(srv.Sent())
	if _, err := fresh.SendChunkID(ctx, channels.Outbound{Address: old, Draft: "62"}, 0, "final answer"); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("editMessageText"); n != 1 {
		t.Errorf("editMessageText called %d times, want 1 (the group's draft, refused; never the supergroup's message 62)", n)
	}
	if s := srv.Sent()[before:]; len(s) != 1 || s[0].Method != "sendMessage" || s[0].ChatID != newID || s[0].Text != "final answer" {
		t.Errorf("sent %+v, want the answer as a new message in the supergroup", s)
	}
}
