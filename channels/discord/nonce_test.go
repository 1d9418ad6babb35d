package discord

import (
	"context"
	"net/http"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// Sending chunk i of one delivery again (its answer was lost, the process
// restarted) posts nothing new: Discord returns the first post's message;
// another chunk, another delivery, or a send without a delivery id posts.
func TestResendOfOneChunkPostsOnce(t *testing.T) {
	h := start(t, Config{}, discordtest.Options{Token: "tok", NoEcho: true})
	ctx := ctxT(t)
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: "c1"}, DeliveryID: "reply-1"}
	first, err := h.a.SendChunkID(ctx, out, 0, "part one")
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.a.SendChunkID(ctx, out, 0, "part one")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("the resend answered message %s, want the first post's %s", again, first)
	}
	if _, err := h.a.SendChunkID(ctx, out, 1, "part two"); err != nil {
		t.Fatal(err)
	}
	other := out
	other.DeliveryID = "reply-2"
	if _, err := h.a.SendChunkID(ctx, other, 0, "part one"); err != nil {
		t.Fatal(err)
	}
	plain := out
	plain.DeliveryID = ""
	for range 2 {
		if _, err := h.a.SendChunkID(ctx, plain, 0, "a notice"); err != nil {
			t.Fatal(err)
		}
	}
	sent := h.fake.Sent()
	if len(sent) != 5 || h.fake.NonceRepeats() != 1 {
		t.Errorf("%d posts created, %d answered by an earlier one; want 5 and 1: %+v", len(sent), h.fake.NonceRepeats(), sent)
	}
	nonces := map[string]bool{}
	for _, s := range sent[:3] {
		if s.Nonce == "" || len(s.Nonce) > 25 || nonces[s.Nonce] {
			t.Errorf("post %+v: want a nonce of its own, at most 25 characters", s)
		}
		nonces[s.Nonce] = true
	}
}

// A post whose answer is lost (Discord created the message, the bot saw a
// 500) and is sent again shows once.
func TestLostAnswerResentPostsOnce(t *testing.T) {
	h := start(t, Config{}, discordtest.Options{Token: "tok", NoEcho: true})
	ctx := ctxT(t)
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: "c1"}, DeliveryID: "reply-1"}
	h.fake.LoseAnswerNext(1)
	if _, err := h.a.SendChunkID(ctx, out, 0, "hello"); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	id, err := h.a.SendChunkID(context.Background(), out, 0, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if sent := h.fake.Sent(); len(sent) != 1 || sent[0].MessageID != id {
		t.Errorf("posts %+v, want one, message %s", sent, id)
	}
}

// TestBadGatewayRetryPostsOnce: discordgo repeats a post answered 502 Bad
// Gateway by itself (a proxy failing on the way back, after Discord made
// the message). A post without an outbox delivery (a notice, a draft)
// still carries a nonce of its own, so the repeat shows nothing new.
func TestBadGatewayRetryPostsOnce(t *testing.T) {
	h := start(t, Config{}, discordtest.Options{Token: "tok", NoEcho: true})
	ctx := ctxT(t)
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: "c1"}}
	out.Text = "your pairing code is 1234"
	h.fake.LoseAnswerNextWith(1, http.StatusBadGateway)
	if err := h.a.Notify(ctx, out); err != nil {
		t.Fatal(err)
	}
	h.fake.LoseAnswerNextWith(1, http.StatusBadGateway)
	id, err := h.a.SendDraft(ctx, out, "Thinking…")
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.Sent()
	if len(sent) != 2 || sent[1].MessageID != id || h.fake.NonceRepeats() != 2 {
		t.Fatalf("posts %+v (%d answered by an earlier one); want the notice and the draft %s once each", sent, h.fake.NonceRepeats(), id)
	}
}
