package discord

import (
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestReactAddsAndRemoves: the bot's reaction goes on the message in its
// thread (PUT …/@me) and comes off with DELETE.
func TestReactAddsAndRemoves(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	target := channels.Outbound{Address: channels.Address{ChatID: channelID, ThreadID: threadID}}
	for _, remove := range []bool{false, true} {
		if err := h.a.React(ctxT(t), channels.Reaction{Target: target, MessageID: "123", Emoji: "👀", Remove: remove}); err != nil {
			t.Fatal(err)
		}
	}
	got := h.fake.Reactions()
	want := []discordtest.Reaction{{ChannelID: threadID, MessageID: "123", Emoji: "👀"},
		{ChannelID: threadID, MessageID: "123", Emoji: "👀", Removed: true}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("reactions %+v, want %+v", got, want)
	}
	if err := h.a.React(ctxT(t), channels.Reaction{Target: target, Emoji: "👀"}); err == nil {
		t.Error("a reaction without a message id was sent")
	}
}
