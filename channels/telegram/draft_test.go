package telegram_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestDraftSendEditDelete: a draft is posted, edited (an unchanged edit is
// no error), and deleted; a 429 on an edit comes back at once with its
// retry_after for the caller to honour.
func TestDraftSendEditDelete(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}}
	mid, err := a.SendDraft(ctx, out, "Thinking…")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(mid)
	if err := a.EditDraft(ctx, out, mid, "Using **search**…"); err != nil {
		t.Fatal(err)
	}
	if err := a.EditDraft(ctx, out, mid, "Using **search**…"); err != nil {
		t.Fatalf("unchanged edit: %v", err)
	}
	srv.FailNext("editMessageText", telegramtest.Failure{Code: 429, RetryAfter: 3})
	err = a.EditDraft(ctx, out, mid, "Thinking… (step 2)")
	if got := channels.RetryAfter(err); got != 3*time.Second {
		t.Fatalf("429 edit: RetryAfter(%v) = %v, want 3s", err, got)
	}
	long := strings.Repeat("word ", 2000)
	if err := a.EditDraft(ctx, out, mid, long); err != nil {
		t.Fatalf("long draft not cut: %v", err)
	}
	eds := srv.Edits(forum, n)
	if len(eds) != 2 || eds[0].Text != "Using <b>search</b>…" || !strings.HasSuffix(eds[1].Text, "…") {
		t.Fatalf("edits = %+v", eds)
	}
	if vis := srv.Visible(forum); len(vis) != 1 || vis[0].ThreadID != 77 {
		t.Fatalf("visible = %+v, want the draft in topic 77", vis)
	}
	if err := a.DeleteDraft(ctx, out, mid); err != nil {
		t.Fatal(err)
	}
	if vis := srv.Visible(forum); len(vis) != 0 {
		t.Fatalf("deleted draft still visible: %+v", vis)
	}
	if err := a.EditDraft(ctx, out, mid, "late"); err == nil {
		t.Fatal("edit of a deleted draft succeeded")
	}
}

// TestChunkZeroReplacesDraft: a reply with Draft set edits the draft into
// its first chunk and sends the rest as new messages; a draft that is gone
// gets the chunk as a new message.
func TestChunkZeroReplacesDraft(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", ChatID: "111"}, ReplyToID: "5"}
	mid, err := a.SendDraft(ctx, out, "partial ans")
	if err != nil {
		t.Fatal(err)
	}
	out.Draft = mid
	out.Text = strings.Repeat("a", telegram.MaxMessageLength) + "\n\nsecond"
	chunks := a.Chunks(out)
	for i, c := range chunks {
		if err := a.SendChunk(ctx, out, i, c); err != nil {
			t.Fatal(err)
		}
	}
	vis := srv.Visible(111)
	if len(vis) != 2 || vis[0].Text != chunks[0] || vis[1].Text != "second" || vis[1].ReplyTo != 0 {
		t.Fatalf("visible = %+v", vis)
	}
	// Sent again after a restart: an edit to the same text is no error and
	// adds nothing.
	if err := a.SendChunk(ctx, out, 0, chunks[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteDraft(ctx, out, mid); err != nil {
		t.Fatal(err)
	}
	if err := a.SendChunk(ctx, out, 0, "short"); err != nil {
		t.Fatal(err)
	}
	vis = srv.Visible(111)
	if len(vis) != 2 || vis[1].Text != "short" || vis[1].ReplyTo != 5 {
		t.Fatalf("after the draft was deleted: %+v", vis)
	}
}
