package telegram

import (
	"fmt"

	"net/url"
	"strings"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/secret"
)

// Modes of receiving updates.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// DefaultAPIRoot is the public Bot API server.
const DefaultAPIRoot = "https://api.telegram.org"

// DefaultPollTimeoutSeconds is the long-poll timeout sent with getUpdates.
const DefaultPollTimeoutSeconds = 30

// Config is the platform part of one Telegram bot account
// (channels.telegram.accounts.<id>): how to reach the Bot API. The
// account's access and room rules (dmPolicy, allowFrom, groupPolicy,
// groups, requireMention, room defaults) sit beside these keys in the YAML
// but belong to the access package; configs composes the two, and the
// adapter gets what it needs of the rules as functions (Options).
type Config struct {
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`
	// APIRoot is the Bot API server, e.g. a self-hosted telegram-bot-api.
	APIRoot string `mapstructure:"apiRoot"`
	// Mode is polling (default) or webhook.
	Mode    string  `mapstructure:"mode"`
	Webhook Webhook `mapstructure:"webhook"`
	// PollTimeoutSeconds is the getUpdates long-poll timeout (1–50, default 30).
	PollTimeoutSeconds int `mapstructure:"pollTimeoutSeconds"`
	// MediaMaxMb caps one attachment's download (default 20, max 2000;
	// the public Bot API serves at most 20 MB).
	MediaMaxMb int `mapstructure:"mediaMaxMb"`
	// AutomaticForwards answers the copies Telegram posts into a
	// channel's linked discussion group of every channel post
	// (is_automatic_forward). Off by default: they are dropped, or a group
	// that needs no mention would answer every post.
	AutomaticForwards bool `mapstructure:"automaticForwards"`
}

// Webhook configures webhook mode.
type Webhook struct {
	// URL is the public HTTPS address Telegram posts updates to.
	URL string `mapstructure:"url"`
	// Listen, if set, is the address the adapter serves the webhook on
	// itself; empty means the daemon mounts WebhookHandler on its server.
	Listen string `mapstructure:"listen"`
	// SecretToken is sent by Telegram in X-Telegram-Bot-Api-Secret-Token.
	SecretToken string `mapstructure:"secretToken"`
	// SecretTokenFile holds the secret token instead (read at start, like
	// tokenFile), so it need not travel in the config or the environment.
	SecretTokenFile string `mapstructure:"secretTokenFile"`
	// Path is where the handler is mounted; default the URL's path.
	Path string `mapstructure:"path"`
}

// DefaultConfig returns an account config with every default filled in.
func DefaultConfig() Config { return Config{}.WithDefaults() }

// WithDefaults returns c with empty fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.APIRoot == "" {
		c.APIRoot = DefaultAPIRoot
	}
	c.APIRoot = strings.TrimRight(c.APIRoot, "/")
	if c.Mode == "" {
		c.Mode = ModePolling
	}
	if c.PollTimeoutSeconds == 0 {
		c.PollTimeoutSeconds = DefaultPollTimeoutSeconds
	}
	if c.MediaMaxMb == 0 {
		c.MediaMaxMb = channels.DefaultMediaMaxMB
	}
	if c.Webhook.Path == "" {
		c.Webhook.Path = "/telegram/webhook"
		if u, err := url.Parse(c.Webhook.URL); err == nil && u.Path != "" && u.Path != "/" {
			c.Webhook.Path = u.Path
		}
	}
	return c
}

// Validate checks c (after defaults); errors start with the key they name,
// relative to the account ("webhook.secretToken: ...").
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.Token == "" && c.TokenFile == "" {
		return fmt.Errorf("token: required (or tokenFile)")
	}
	if c.Token != "" && c.TokenFile != "" { // which one wins would be a guess
		return fmt.Errorf("tokenFile: set either token or tokenFile, not both")
	}
	if strings.ContainsAny(c.Token, " \t\r\n/") {
		return fmt.Errorf("token: must not contain spaces or '/'")
	}
	u, err := url.Parse(c.APIRoot)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("apiRoot: %q is not an http(s) URL", c.APIRoot)
	}
	switch c.Mode {
	case ModePolling:
	case ModeWebhook:
		if err := c.Webhook.validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("mode: %q is not polling or webhook", c.Mode)
	}
	if c.PollTimeoutSeconds < 1 || c.PollTimeoutSeconds > 50 {
		return fmt.Errorf("pollTimeoutSeconds: %d is not between 1 and 50", c.PollTimeoutSeconds)
	}
	if c.MediaMaxMb < 1 || c.MediaMaxMb > channels.MaxMediaMaxMB {
		return fmt.Errorf("mediaMaxMb: %d is not between 1 and %d", c.MediaMaxMb, channels.MaxMediaMaxMB)
	}
	return nil
}

func (w Webhook) validate() error {
	u, err := url.Parse(w.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("webhook.url: %q is not an https URL (required in webhook mode)", w.URL)
	}
	if w.SecretToken != "" && w.SecretTokenFile != "" {
		return fmt.Errorf("webhook.secretTokenFile: set either secretToken or secretTokenFile, not both")
	}
	if w.SecretTokenFile == "" { // a file is read and checked at start (ResolveSecret)
		if err := checkSecret("webhook.secretToken", w.SecretToken); err != nil {
			return err
		}
	}
	if !strings.HasPrefix(w.Path, "/") {
		return fmt.Errorf("webhook.path: %q must start with /", w.Path)
	}
	return nil
}

// checkSecret checks a webhook secret token as Telegram takes it.
func checkSecret(key, token string) error {
	if n := len(token); n < 1 || n > 256 {
		return fmt.Errorf("%s: required in webhook mode (1-256 characters)", key)
	}
	for _, r := range token {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%s: only A-Z, a-z, 0-9, _ and - are allowed", key)
		}
	}
	return nil
}

// ResolveSecret returns the webhook's secret token, reading and checking
// secretTokenFile when secretToken is empty ("" when neither is set).
func (w Webhook) ResolveSecret() (string, error) {
	if w.SecretToken != "" || w.SecretTokenFile == "" {
		return w.SecretToken, nil
	}
	t, err := secret.ReadFile(w.SecretTokenFile)
	if err != nil {
		return "", fmt.Errorf("webhook.secretTokenFile: %w", err)
	}
	if err := checkSecret("webhook.secretTokenFile", t); err != nil {
		return "", err
	}
	return t, nil
}

// ResolveToken returns the bot token, reading tokenFile when token is empty.
func (c Config) ResolveToken() (string, error) {
	if c.Token != "" {
		return c.Token, nil
	}
	if c.TokenFile == "" {
		return "", fmt.Errorf("token: required (or tokenFile)")
	}
	t, err := secret.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("tokenFile: %w", err)
	}
	return t, nil
}
