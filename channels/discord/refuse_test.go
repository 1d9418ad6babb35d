package discord

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

// TestChannelGoneOrForbidden: a reply to a channel deleted meanwhile
// (404, 10003) or where the bot lost the right to post (403, 50013) fails
// once per call, with Discord's code in the error, as the platform's
// refusal (channels.Answered, no retry_after): the outbox gives the reply
// up as a dead letter after its few retries and counts it as the room
// refusing the bot, never as an unknown outcome. That holds for the first
// part that replaces a draft too.
func TestChannelGoneOrForbidden(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	fo.Guilds[0].Channels = append(fo.Guilds[0].Channels, &discordgo.Channel{ID: "778", Name: "gone", Type: discordgo.ChannelTypeGuildText})
	h := start(t, Config{}, fo)
	ctx := ctxT(t)
	refused := func(what string, err error, code string) {
		t.Helper()
		if err == nil || !channels.Answered(err) || channels.RetryAfter(err) != 0 || !strings.Contains(err.Error(), code) {
			t.Fatalf("%s = %v (answered %v); want a refusal naming %s", what, err, channels.Answered(err), code)
		}
	}
	out := channels.Outbound{Address: channels.Address{ChatID: channelID}, Text: "answer"}
	draft, err := h.a.SendDraft(ctx, out, "Thinking…")
	if err != nil {
		t.Fatal(err)
	}
	h.fake.DenyChannel(channelID)
	refused("Send where the bot may not post", h.a.Send(ctx, out), "50013")
	withDraft := out
	withDraft.Draft = draft
	refused("first part replacing a draft where the bot may not post", h.a.SendChunk(ctx, withDraft, 0, "answer"), "50013")

	h.fake.DeleteChannel("778")
	refused("Send to a deleted channel", h.a.Send(ctx, channels.Outbound{Address: channels.Address{ChatID: "778"}, Text: "late"}), "10003")
	if n := h.fake.Refusals(); n != 3 {
		t.Fatalf("Discord refused %d requests, want 3 (one per call, no retries)", n)
	}
}

// TestTokenRefusalIsTheAccounts: a 401 (the bot's token refused) is a
// refusal of the account, not of the channel (a 403 or 404 is the
// channel's); a 5xx leaves the outcome unknown.
func TestTokenRefusalIsTheAccounts(t *testing.T) {
	for code, want := range map[int][2]bool{401: {true, true}, 403: {true, false}, 404: {true, false}, 502: {false, false}} {
		err := answered(&discordgo.RESTError{Response: &http.Response{StatusCode: code}})
		if channels.Answered(err) != want[0] || channels.AccountRefused(err) != want[1] {
			t.Errorf("%d: answered %v, account refused %v, want %v", code, channels.Answered(err), channels.AccountRefused(err), want)
		}
	}
}
