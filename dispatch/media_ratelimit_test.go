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

// TestRateLimitedFileWaitedOutNotReplaced: a reply's file the platform
// rate-limits for longer than the adapter waits (sendPhoto 429
// retry_after 120) is sent once the limit passed, not replaced by the
// text notice meant for files the platform refuses.
func TestRateLimitedFileWaitedOutNotReplaced(t *testing.T) {
	waits := stubRateWaits(t)
	close(waits.release) // each wait passes at once
	store := mediastore.New(filepath.Join(t.TempDir(), "media-out"))
	h := newHarness(t, "", nil, func(h *harness) { h.disp = func(o *Options) { o.Media = store } })
	srv := telegramtest.Start(t, telegramtest.Options{})
	a, err := telegram.New("default", telegram.Config{Token: srv.Token(), APIRoot: srv.URL, PollTimeoutSeconds: 1},
		telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	sum, n, err := store.Put(strings.NewReader("\x89PNG\r\n\x1a\n chart"))
	if err != nil {
		t.Fatal(err)
	}
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "111"}, Text: "A chart.",
		Media: []channels.MediaGroup{{Caption: "the chart", Items: []channels.OutMedia{{Kind: channels.MediaImage,
			MimeType: "image/png", FileName: "chart.png", Size: n, SHA256: sum}}}}}
	srv.FailNext("sendPhoto", telegramtest.Failure{Code: 429, RetryAfter: 120})
	key := routing.Key{Agent: "main", Channel: "telegram", Kind: routing.Direct, Peer: "111"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !h.d.outbox.deliver(ctx, key, "main", nil, out, "") {
		t.Fatal("deliver refused the reply")
	}
	h.drained()
	sent := srv.Sent()
	if len(sent) != 2 || sent[1].Method != "sendPhoto" || sent[1].Upload == nil || sent[1].Upload.SHA256 != sum {
		t.Fatalf("sent %+v, want the text, then the photo", sent)
	}
	if got := waits.waits(); len(got) != 1 || got[0] != 120*time.Second {
		t.Errorf("waits %v, want the platform's 120s", got)
	}
}
