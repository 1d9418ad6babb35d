package dispatch

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/routing"
)

// TestOutboxMediaFallbacks: the outbox sends a reply's text, then its
// files from the media store; a file the store no longer holds (pruned,
// another replica's state dir) becomes a text notice with its caption
// instead of failing the reply, and what follows still goes out.
func TestOutboxMediaFallbacks(t *testing.T) {
	store := mediastore.New(filepath.Join(t.TempDir(), "media-out"))
	h := newHarness(t, "", nil, func(h *harness) { h.disp = func(o *Options) { o.Media = store } })
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, err := telegram.New("default", telegram.Config{Token: srv.Token(), APIRoot: srv.URL, PollTimeoutSeconds: 1},
		telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	kept, n, err := store.Put(strings.NewReader("\x89PNG\r\n\x1a\n kept"))
	if err != nil {
		t.Fatal(err)
	}
	gone := strings.Repeat("e", 64)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "111"}, Text: "Two charts.",
		Media: []channels.MediaGroup{
			{Caption: "the lost one", Items: []channels.OutMedia{{Kind: channels.MediaImage, MimeType: "image/png", FileName: "gone.png", Size: 2048, SHA256: gone}}},
			{Caption: "the kept one", Items: []channels.OutMedia{{Kind: channels.MediaImage, MimeType: "image/png", FileName: "kept.png", Size: n, SHA256: kept}}},
		}}
	key := routing.Key{Agent: "main", Channel: "telegram", Kind: routing.Direct, Peer: "111"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !h.d.outbox.deliver(ctx, key, "main", nil, out, "") {
		t.Fatal("deliver refused the reply")
	}
	sent := srv.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %d messages, want 3 (text, notice, photo): %+v", len(sent), sent)
	}
	if sent[0].Text != "Two charts." {
		t.Errorf("first %q, want the reply's text", sent[0].Text)
	}
	if !strings.Contains(sent[1].Text, "the lost one") || !strings.Contains(sent[1].Text, "gone.png (2.0 KB) could not be attached: the file is no longer stored on this server") {
		t.Errorf("notice %q", sent[1].Text)
	}
	if sent[2].Method != "sendPhoto" || sent[2].Upload == nil || sent[2].Upload.SHA256 != kept || sent[2].Text != "the kept one" {
		t.Errorf("photo %+v", sent[2])
	}
	rps, err := h.journal().Replies()
	if err != nil || len(rps) != 0 {
		t.Errorf("outbox after delivery: %+v, %v; want it empty", rps, err)
	}
}
