package telegram_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels/telegram"
)

func TestConfigDefaults(t *testing.T) {
	c := telegram.DefaultConfig()
	// The access defaults (pairing, allowlist, requireMention, per-group
	// requireMention) are configs' TestTelegramAccountRules: the rules are
	// no longer part of this Config.
	if c.APIRoot != telegram.DefaultAPIRoot || c.Mode != telegram.ModePolling || c.PollTimeoutSeconds != 30 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestConfigValidateNamesKey(t *testing.T) {
	ok := telegram.Config{Token: "1:a"}
	hook := telegram.Webhook{URL: "https://example.com/hook", SecretToken: "abc"}
	tests := []struct {
		name string
		mod  func(*telegram.Config)
		key  string // "" = valid
	}{
		{"minimal", func(*telegram.Config) {}, ""},
		{"no token", func(c *telegram.Config) { c.Token = "" }, "token:"},
		{"token file instead", func(c *telegram.Config) { c.Token, c.TokenFile = "", "/run/secrets/tg" }, ""},
		{"bad api root", func(c *telegram.Config) { c.APIRoot = "ftp://x" }, "apiRoot:"},
		{"bad mode", func(c *telegram.Config) { c.Mode = "push" }, "mode:"},
		{"webhook ok", func(c *telegram.Config) { c.Mode, c.Webhook = "webhook", hook }, ""},
		{"webhook without url", func(c *telegram.Config) { c.Mode = "webhook"; c.Webhook.SecretToken = "x" }, "webhook.url:"},
		{"webhook over http", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.URL = "http://example.com/hook"
		}, "webhook.url:"},
		{"webhook without secret", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.SecretToken = ""
		}, "webhook.secretToken:"},
		{"webhook secret charset", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.SecretToken = "a b"
		}, "webhook.secretToken:"},
		{"webhook secret from a file", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.SecretToken, c.Webhook.SecretTokenFile = "", "/run/secrets/tg-webhook"
		}, ""},
		{"webhook secret twice", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.SecretTokenFile = "/run/secrets/tg-webhook"
		}, "webhook.secretTokenFile:"},
		{"webhook path", func(c *telegram.Config) {
			c.Mode, c.Webhook = "webhook", hook
			c.Webhook.Path = "hook"
		}, "webhook.path:"},
		// dmPolicy and groupPolicy are the access rules': configs'
		// TestAccountKeysStrict checks them on a Telegram account.
		{"poll timeout", func(c *telegram.Config) { c.PollTimeoutSeconds = 51 }, "pollTimeoutSeconds:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			switch {
			case tt.key == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.key != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.key)):
				t.Errorf("Validate() = %v, want an error starting with %q", err, tt.key)
			}
		})
	}
}

func TestNewReadsTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("42:from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := telegram.New("default", telegram.Config{TokenFile: p}, telegram.Options{}); err != nil {
		t.Fatalf("New with tokenFile: %v", err)
	}
	_, err := telegram.New("default", telegram.Config{TokenFile: p + ".missing"}, telegram.Options{})
	if err == nil || !strings.Contains(err.Error(), "tokenFile") {
		t.Fatalf("New with a missing tokenFile = %v, want an error naming tokenFile", err)
	}
}

func TestFileStoreMigrations(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "telegram")
	s := telegram.FileOffsetStore(dir)
	ctx := testCtx(t)
	if m, err := s.LoadMigrations(ctx, "bot1"); err != nil || len(m) != 0 {
		t.Fatalf("empty store: %v %v", m, err)
	}
	if err := s.SaveMigration(ctx, "bot1", -5, -1005); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMigration(ctx, "bot1", -6, -1006); err != nil {
		t.Fatal(err)
	}
	m, err := telegram.FileOffsetStore(dir).LoadMigrations(ctx, "bot1")
	if err != nil || m[-5] != -1005 || m[-6] != -1006 || len(m) != 2 {
		t.Fatalf("reloaded migrations %v (%v)", m, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store dir mode %v (%v), want 0700", fi.Mode(), err)
	}
	if err := s.Save(ctx, "../escape", 1); err == nil {
		t.Error("account id with .. accepted")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
