package configs

import "testing"

func TestEnvKey(t *testing.T) {
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"GATEWAY_HTTP_LISTEN", "http::listen", true},
		{"GATEWAY_STORAGE_POSTGRES_REPLICA_ID", "storage::postgres::replicaid", true},
		{"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_SECRET_TOKEN", "channels::telegram::accounts::default::webhook::secrettoken", true},
		{"GATEWAY_CHANNELS_TELEGRAM_TOKEN", "channels::telegram::accounts::default::token", true},
		{"GATEWAY_STORAGE_POSTGRES_REPLICA", "", false},
		{"GATEWAY_CONFIG", "", false}, // the CLI's, not a config key
		{"HTTP_LISTEN", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EnvKey(tt.name)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("EnvKey(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestEnvWebhookSecretReachesTheAccount: an account's webhook.secretToken
// set from the environment lands on that account, not on a new account
// whose id swallowed "webhook_secret" (whose token it would become).
func TestEnvWebhookSecretReachesTheAccount(t *testing.T) {
	yaml := []byte("channels:\n  telegram:\n    accounts:\n      default: {token: \"1:x\", mode: webhook}\n")
	cfg, err := LoadBytes(yaml, []string{
		"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_URL=https://bot.example.com/telegram/webhook",
		"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_SECRET_TOKEN=s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	accts := cfg.Channels.Telegram.Accounts
	if len(accts) != 1 || accts["default"].Webhook.SecretToken != "s3cret" {
		t.Fatalf("accounts = %+v, want only default with webhook.secretToken s3cret", accts)
	}
}
