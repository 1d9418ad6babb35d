package telegram_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

const secret = "s3cret-Token_1"

func startWebhook(t *testing.T) (*telegramtest.Server, *telegram.Adapter, *recorder, *httptest.Server) {
	t.Helper()
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	cfg.Mode = telegram.ModeWebhook
	cfg.Webhook = telegram.Webhook{URL: "https://bot.example.com/tg/hook", SecretToken: secret}
	a := newAdapter(t, srv, cfg, nil)
	if a.WebhookPath() != "/tg/hook" {
		t.Errorf("WebhookPath = %q, want the URL's path", a.WebhookPath())
	}
	hook := httptest.NewServer(a.WebhookHandler())
	t.Cleanup(hook.Close)
	rec := newRecorder()
	run(t, a, rec.handle)
	if err := srv.WaitCalls(testCtx(t), "setWebhook", 1); err != nil {
		t.Fatal(err)
	}
	return srv, a, rec, hook
}

func TestWebhookRegistersWithSecret(t *testing.T) {
	srv, _, _, _ := startWebhook(t)
	wh, ok := srv.Webhook()
	if !ok || wh.URL != "https://bot.example.com/tg/hook" || wh.SecretToken != secret {
		t.Fatalf("webhook %+v (set %v)", wh, ok)
	}
}

// TestWebhookSecretFromFile: webhook.secretTokenFile is read at start,
// registered with Telegram and checked on requests; a file whose content
// Telegram would refuse fails New naming the key.
func TestWebhookSecretFromFile(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "secret"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("has spaces in it\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(srv)
	cfg.Mode = telegram.ModeWebhook
	cfg.Webhook = telegram.Webhook{URL: "https://bot.example.com/tg/hook", SecretTokenFile: bad}
	if _, err := telegram.New("default", cfg, telegram.Options{}); err == nil || !strings.Contains(err.Error(), "webhook.secretTokenFile") {
		t.Fatalf("New with a bad secret file = %v, want an error naming webhook.secretTokenFile", err)
	}
	cfg.Webhook.SecretTokenFile = good
	a := newAdapter(t, srv, cfg, nil)
	hook := httptest.NewServer(a.WebhookHandler())
	t.Cleanup(hook.Close)
	rec := newRecorder()
	run(t, a, rec.handle)
	ctx := testCtx(t)
	if err := srv.WaitCalls(ctx, "setWebhook", 1); err != nil {
		t.Fatal(err)
	}
	if wh, ok := srv.Webhook(); !ok || wh.SecretToken != secret {
		t.Fatalf("registered webhook %+v (set %v), want the file's secret", wh, ok)
	}
	u := srv.DM(alice, "from a file")
	if code, err := srv.DeliverWebhook(ctx, hook.URL, u, "wrong"); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: status %d (%v), want 401", code, err)
	}
	if code, err := srv.DeliverWebhook(ctx, hook.URL, u, ""); err != nil || code != http.StatusOK {
		t.Fatalf("the file's secret: status %d (%v), want 200", code, err)
	}
}

func TestWebhookWrongSecretIs401(t *testing.T) {
	srv, _, rec, hook := startWebhook(t)
	u := srv.DM(alice, "let me in")
	ctx := testCtx(t)
	for _, bad := range []string{"wrong", "s3cret-Token_"} {
		code, err := srv.DeliverWebhook(ctx, hook.URL, u, bad)
		if err != nil || code != http.StatusUnauthorized {
			t.Fatalf("secret %q: status %d (%v), want 401", bad, code, err)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, strings.NewReader(`{"update_id":1}`))
	resp, err := hook.Client().Do(req) // no header at all
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no secret: %v %v, want 401", resp, err)
	}
	resp.Body.Close()
	if n := rec.callCount(); n != 0 {
		t.Fatalf("handler called %d times for unauthorised requests", n)
	}
	code, err := srv.DeliverWebhook(ctx, hook.URL, u, "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("right secret: status %d (%v), want 200", code, err)
	}
	if got := rec.accepted(); len(got) != 1 || got[0].Text != "let me in" {
		t.Fatalf("got %+v", got)
	}
}

func TestWebhookAcknowledgesOnlyAccepted(t *testing.T) {
	srv, _, rec, hook := startWebhook(t)
	rec.fail = func(in channels.Inbound, call int) error {
		if call == 1 {
			return errJournalDown
		}
		return nil
	}
	ctx := testCtx(t)
	u := srv.DM(alice, "durable?")
	if code, _ := srv.DeliverWebhook(ctx, hook.URL, u, ""); code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500 while the handler fails", code)
	}
	if srv.Pending() != 1 {
		t.Fatal("update confirmed although the handler failed")
	}
	if code, _ := srv.DeliverWebhook(ctx, hook.URL, u, ""); code != http.StatusOK {
		t.Fatalf("status %d on redelivery, want 200", code)
	}
	// Unmentioned group messages are acknowledged without the handler.
	g := srv.Group(group, bob, "chatter")
	if code, _ := srv.DeliverWebhook(ctx, hook.URL, g, ""); code != http.StatusOK {
		t.Fatalf("status %d for a dropped message, want 200", code)
	}
	if n := rec.callCount(); n != 2 {
		t.Errorf("handler called %d times, want 2", n)
	}
}

func TestPollingModeDeletesWebhook(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	cfg.Mode = telegram.ModeWebhook
	cfg.Webhook = telegram.Webhook{URL: "https://bot.example.com/hook", SecretToken: secret}
	stop := run(t, newAdapter(t, srv, cfg, nil), newRecorder().handle)
	if err := srv.WaitCalls(testCtx(t), "setWebhook", 1); err != nil {
		t.Fatal(err)
	}
	stop()
	// Switching the account back to polling must work despite the webhook.
	_, rec := startPolling(t, srv, baseConfig(srv))
	u := srv.DM(alice, "polling again")
	waitConfirmed(t, srv, u)
	if _, set := srv.Webhook(); set {
		t.Error("webhook still set in polling mode")
	}
	if len(rec.accepted()) != 1 {
		t.Errorf("got %d messages, want 1", len(rec.accepted()))
	}
}
