package discord

import (
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

// TestDraftPostEditDelete: a draft is posted as a reply that pings no one,
// edited (a 429 on the edit is returned at once with its retry_after, as
// channels.Drafter asks: the caller skips to its latest text; once it
// has passed the edit lands), replaced by a reply's first part, and a reply whose draft is
// gone posts its first part instead; a deleted draft is gone.
func TestDraftPostEditDelete(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	h := start(t, Config{}, fo)
	ctx := ctxT(t)
	out := channels.Outbound{Address: channels.Address{ChatID: channelID}, ReplyToID: "123"}
	id, err := h.a.SendDraft(ctx, out, "Thinking…")
	if err != nil {
		t.Fatal(err)
	}
	if s := h.fake.Sent()[0]; s.Reference == nil || s.Reference.MessageID != "123" || len(s.AllowedMentions.Parse) != 0 {
		t.Fatalf("draft posted as %+v", s)
	}
	h.fake.RateLimitEditsNext(1)
	err = h.a.EditDraft(ctx, out, id, "Searching…")
	ra := channels.RetryAfter(err)
	if ra <= 0 {
		t.Fatalf("rate-limited edit = %v, want its retry_after", err)
	}
	time.Sleep(ra)
	if err := h.a.EditDraft(ctx, out, id, "Using search…"); err != nil {
		t.Fatal(err)
	}
	if vis := h.fake.Visible(channelID); len(vis) != 1 || vis[0].Content != "Using search…" {
		t.Fatalf("after a rate-limited edit the channel shows %+v", vis)
	}
	out.Draft = id
	if err := h.a.SendChunk(ctx, out, 0, "the answer"); err != nil {
		t.Fatal(err)
	}
	if vis := h.fake.Visible(channelID); len(vis) != 1 || vis[0].Content != "the answer" {
		t.Fatalf("after the hand-over the channel shows %+v", vis)
	}
	if err := h.a.DeleteDraft(ctx, out, id); err != nil {
		t.Fatal(err)
	}
	if err := h.a.SendChunk(ctx, out, 0, "posted anew"); err != nil {
		t.Fatal(err)
	}
	vis := h.fake.Visible(channelID)
	if len(vis) != 1 || vis[0].Content != "posted anew" || vis[0].Reference == nil {
		t.Fatalf("with the draft gone the channel shows %+v", vis)
	}
}
