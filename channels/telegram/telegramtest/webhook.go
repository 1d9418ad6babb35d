package telegramtest

import "net/url"

// applyWebhookLocked applies setWebhook and deleteWebhook to the webhook
// state (other methods are left alone).
func (s *Server) applyWebhookLocked(method string, form url.Values) {
	switch method {
	case "setWebhook":
		s.webhook = &Webhook{URL: form.Get("url"), SecretToken: form.Get("secret_token")}
	case "deleteWebhook":
		s.webhook = nil
		if form.Get("drop_pending_updates") == "true" {
			s.updates = nil
		}
	}
}
