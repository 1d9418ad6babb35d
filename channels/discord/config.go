package discord

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
)

// Config is one Discord account (channels.discord.accounts.<id>).
type Config struct {
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`

	DMPolicy    access.DMPolicy    `mapstructure:"dmPolicy"`
	AllowFrom   []string           `mapstructure:"allowFrom"`
	GroupPolicy access.GroupPolicy `mapstructure:"groupPolicy"`
	// Guilds holds access rules keyed by guild, channel or thread id (Discord
	// ids are unique across kinds), or "*".
	Guilds map[string]access.GroupRule `mapstructure:"guilds"`
	// RequireMention gates guild messages on a mention of the bot; nil
	// means true.
	RequireMention *bool        `mapstructure:"requireMention"`
	Thread         ThreadConfig `mapstructure:"thread"`
	// APIBase sends this account's REST calls (gateway discovery included,
	// which names the websocket gateway) to another origin, such as an
	// operator's proxy or a test fake: https://discord.com/api/... becomes
	// <apiBase>/api/.... Empty: Discord itself.
	APIBase string `mapstructure:"apiBase"`
	// Streaming is how replies show progress (off, progress, partial).
	Streaming channels.StreamingConfig `mapstructure:"streaming"`
}

// ThreadConfig configures Discord threads.
type ThreadConfig struct {
	// InheritParent copies the parent channel's transcript into a new
	// thread's session (off by default; done by the dispatcher).
	InheritParent bool `mapstructure:"inheritParent"`
}

// Access returns the account's access configuration.
func (c Config) Access() access.Config {
	return access.Config{DMPolicy: c.DMPolicy, AllowFrom: c.AllowFrom, GroupPolicy: c.GroupPolicy,
		Groups: c.Guilds, RequireMention: c.RequireMention, GroupsKey: "guilds"}
}

// Validate checks c and names the offending key ("token: ...").
func (c Config) Validate() error {
	if strings.TrimSpace(c.Token) == "" && strings.TrimSpace(c.TokenFile) == "" {
		return errors.New("token: required (or tokenFile)")
	}
	if c.Token != "" && c.TokenFile != "" {
		return errors.New("tokenFile: set either token or tokenFile, not both")
	}
	if c.APIBase != "" {
		u, err := url.Parse(c.APIBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("apiBase: %q is not an http(s) URL", c.APIBase)
		}
	}
	if err := c.Streaming.Validate(); err != nil {
		return err
	}
	return c.Access().Validate()
}

// token returns the bot token, read from TokenFile when Token is empty.
func (c Config) token() (string, error) {
	if c.Token != "" {
		return strings.TrimSpace(c.Token), nil
	}
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("tokenFile: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("tokenFile: %s is empty", c.TokenFile)
	}
	return t, nil
}
