package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// SecretHeader carries webhook.secretToken on every webhook request.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxWebhookBody bounds one update's size.
const maxWebhookBody = 4 << 20

// WebhookPath is where WebhookHandler expects to be mounted.
func (a *Adapter) WebhookPath() string { return a.cfg.Webhook.Path }

// WebhookHandler returns the http.Handler Telegram posts updates to. It
// answers 401 without the right secret token, 503 until Run is running in
// webhook mode, and 200 only once the Handler accepted (or rejected on
// purpose) the update; 500 makes Telegram deliver it again later. The
// daemon mounts it at WebhookPath unless webhook.listen is set.
func (a *Adapter) WebhookHandler() http.Handler {
	return http.HandlerFunc(a.serveWebhook)
}

func (a *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	got := r.Header.Get(SecretHeader)
	want := a.cfg.Webhook.SecretToken
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hp := a.handler.Load()
	if hp == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	if len(body) > maxWebhookBody {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	var u update
	if err := json.Unmarshal(body, &u); err != nil {
		// Telegram never sends this; answering 200 would lose nothing real,
		// but 400 makes a broken proxy visible.
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}
	if err := a.handleUpdate(r.Context(), *hp, &u); err != nil {
		if r.Context().Err() == nil {
			a.log.Warn("handler did not accept telegram update; Telegram will redeliver it",
				zap.Int("update_id", u.UpdateID), zap.Error(err))
		}
		http.Error(w, "not accepted", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// runWebhook registers the webhook, serves it on webhook.listen if set, and
// waits for ctx.
func (a *Adapter) runWebhook(ctx context.Context, h channels.Handler) error {
	a.handler.Store(&h)
	defer a.handler.Store(nil)
	var srv *http.Server
	srvErr := make(chan error, 1)
	if a.cfg.Webhook.Listen != "" {
		ln, err := net.Listen("tcp", a.cfg.Webhook.Listen)
		if err != nil {
			return fmt.Errorf("telegram: webhook listen %s: %w", a.cfg.Webhook.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle(a.cfg.Webhook.Path, a.WebhookHandler())
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { srvErr <- srv.Serve(ln) }()
		a.log.Info("telegram webhook listening", zap.String("listen", ln.Addr().String()), zap.String("path", a.cfg.Webhook.Path))
	}
	bo := a.newBackoff()
	for {
		err := a.setWebhook(ctx)
		if err == nil {
			a.conn.Connected()
			break
		}
		if ctx.Err() != nil {
			break
		}
		a.conn.Failed(err)
		wait := bo.next()
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			wait = ae.RetryAfter
		}
		a.log.Warn("telegram setWebhook failed, retrying", zap.Error(err), zap.Duration("retry_in", wait))
		sleep(ctx, wait)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		runErr = fmt.Errorf("telegram: webhook server: %w", err)
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if runErr == nil {
			<-srvErr
		}
	}
	return runErr
}

func (a *Adapter) setWebhook(ctx context.Context) error {
	_, err := a.call(ctx, "setWebhook", tgbotapi.Params{
		"url":             a.cfg.Webhook.URL,
		"secret_token":    a.cfg.Webhook.SecretToken,
		"allowed_updates": allowedUpdates,
	})
	return err
}
