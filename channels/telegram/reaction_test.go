package telegram_test

import (
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
