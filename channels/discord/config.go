package discord

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/secret"
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
	// RoomDefaults are this account's settings for all its rooms
	// (historyLimit, streaming, errorPolicy, replyToMode, ackReaction).
	channels.RoomDefaults `mapstructure:",squash"`
	// APIBase sends this account's REST calls (gateway discovery included,
	// which names the websocket gateway) to another origin, such as an
	// operator's proxy or a test fake: https://discord.com/api/... becomes
	// <apiBase>/api/.... Empty: Discord itself.
	APIBase string `mapstructure:"apiBase"`
	// SlashCommands is where the command catalogue is registered as slash
	// commands at start (and, in guild mode, in guilds a reload adds):
	// guild (default), global or off (SlashGuild...).
	SlashCommands string `mapstructure:"slashCommands"`
	// MediaMaxMb caps one attachment's download (0: 20; at most 2000).
	MediaMaxMb int `mapstructure:"mediaMaxMb"`
}

// ThreadConfig configures Discord threads.
type ThreadConfig struct {
	// InheritParent seeds a new thread's session with the parent
	// channel's recent messages (off by default; done by the dispatcher).
	InheritParent bool `mapstructure:"inheritParent"`
}

// Access returns the account's access configuration.
func (c Config) Access() access.Config {
	return access.Config{DMPolicy: c.DMPolicy, AllowFrom: c.AllowFrom, GroupPolicy: c.GroupPolicy,
		Groups: c.Guilds, RequireMention: c.RequireMention, GroupsKey: "guilds",
		Room: c.RoomDefaults, InheritParent: c.Thread.InheritParent}
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
	switch c.SlashCommands {
	case "", SlashGuild, SlashGlobal, SlashOff:
	default:
		return fmt.Errorf("slashCommands: %q is not guild, global or off", c.SlashCommands)
	}
	if c.MediaMaxMb < 0 || c.MediaMaxMb > channels.MaxMediaMaxMB {
		return fmt.Errorf("mediaMaxMb: %d is not between 1 and %d", c.MediaMaxMb, channels.MaxMediaMaxMB)
	}
	return c.Access().Validate()
}

// token returns the bot token, read from TokenFile when Token is empty.
func (c Config) token() (string, error) {
	if c.Token != "" {
		return strings.TrimSpace(c.Token), nil
	}
	t, err := secret.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("tokenFile: %w", err)
	}
	return t, nil
}
