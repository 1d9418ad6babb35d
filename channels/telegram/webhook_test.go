package telegram_test

import (
	"net/http"
	"net/http/httptest"
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
