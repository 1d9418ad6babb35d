package telegram_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestReactSetsAndRemoves: React puts the emoji on the message with
// setMessageReaction (in a forum topic too: the message id names it) and
// Remove sends the empty list; a late message of a group that became a
// supergroup (id marked "m") gets none: the supergroup's ids are its own.
func TestReactSetsAndRemoves(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	var _ channels.Reactor = a
	ctx := testCtx(t)
	topic := channels.Outbound{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}}
	for _, r := range []channels.Reaction{
		{Target: topic, MessageID: "501", Emoji: "👀"},
		{Target: topic, MessageID: "501", Emoji: "👀", Remove: true},
	} {
		if err := a.React(ctx, r); err != nil {
			t.Fatalf("React(%+v): %v", r, err)
		}
	}
	want := []telegramtest.Reaction{
		{ChatID: forum, MessageID: 501, Emoji: []string{"👀"}},
		{ChatID: forum, MessageID: 501},
	}
	late := channels.Reaction{Target: channels.Outbound{Address: channels.Address{ChatID: "-100900"}}, MessageID: "m42", Emoji: "👍"}
	if err := a.React(ctx, late); err == nil {
		t.Error("a reaction to a late message of an upgraded group was sent")
	}
	if diff := cmp.Diff(want, srv.Reactions()); diff != "" {
		t.Errorf("reactions (-want +got):\n%s", diff)
	}
	if err := a.React(ctx, channels.Reaction{Target: topic, Emoji: "👀"}); err == nil {
		t.Error("a reaction without a message id was sent")
	}
}

// A reply sent after its group became a supergroup (the turn began in the
// group) lives in the supergroup: a reaction to it there is reported
// under the supergroup's chat id, where the group's session moved, and
// not under the old group's id (which made a stray session of the old
// key).
func TestReactionToReplyFollowedIntoSupergroup(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, rec := startPolling(t, srv, baseConfig(srv))
	const oldID, newID = int64(-4011), int64(-1004011)
	srv.Migrate(oldID, newID)
	ctx := testCtx(t)
	if err := a.Send(ctx, channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(oldID))},
		Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent()
	if len(sent) != 1 || sent[0].ChatID != newID {
		t.Fatalf("sent %+v, want one message in the supergroup", sent)
	}
	u := srv.UserReaction(newID, "supergroup", sent[0].MessageID, bob, "Bob", "", "👍")
	waitConfirmed(t, srv, u)
	var got []channels.Inbound // the migration's service messages come as moves
	for _, in := range rec.accepted() {
		if in.Event != nil && in.Event.Kind == channels.EventReaction {
			got = append(got, in)
		}
	}
	if len(got) != 1 {
		t.Fatalf("accepted reactions %+v, want one", got)
	}
	if got[0].ChatID != id(int(newID)) || got[0].MessageID != id(sent[0].MessageID) {
		t.Errorf("reaction reported in chat %s on message %s, want chat %d message %d", got[0].ChatID, got[0].MessageID, newID, sent[0].MessageID)
	}
}

// A reply streamed as a draft is the bot's message from its first
// version on: a reaction to it while the answer is still being written is
// heard like one to the finished reply (the draft was not in the sent
// log until the reply replaced it, so the reaction was dropped).
func TestReactionToDraftIsHeard(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, rec := startPolling(t, srv, baseConfig(srv))
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}}
	draft, err := a.SendDraft(ctx, out, "Thinking about")
	if err != nil {
		t.Fatal(err)
	}
	mid, _ := strconv.Atoi(draft)
	u := srv.UserReaction(forum, "supergroup", mid, bob, "Bob", "", "👀")
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 1 || got[0].Event == nil || got[0].Event.Kind != channels.EventReaction {
		t.Fatalf("accepted %+v, want the reaction", got)
	}
	if got[0].Address != out.Address || got[0].MessageID != draft {
		t.Errorf("reaction at %+v on %s, want %+v on %s", got[0].Address, got[0].MessageID, out.Address, draft)
	}
}
