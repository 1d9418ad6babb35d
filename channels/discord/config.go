package discord

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/secret"
)

// Config is the platform part of one Discord account
// (channels.discord.accounts.<id>): how to reach Discord and where to offer
// slash commands. The account's access and room rules (dmPolicy,
// allowFrom, groupPolicy, guilds, requireMention, thread, room defaults)
// sit beside these keys in the YAML but belong to the access package;
// configs composes the two, and the adapter gets what it needs of the
// rules as functions (Options).
type Config struct {
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`
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
	// UploadLimitsMb are the largest file the bot may attach, by the
	// guild's boost tier 0, 1, 2 and 3 (DMs: tier 0); default 10, 25, 50,
	// 100 (media_send.go). A larger file is replaced by a text notice.
	UploadLimitsMb []int `mapstructure:"uploadLimitsMb"`
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
	if n := len(c.UploadLimitsMb); n != 0 && n != 4 {
		return fmt.Errorf("uploadLimitsMb: %d values; want 4 (boost tiers 0, 1, 2 and 3)", n)
	}
	for i, mb := range c.UploadLimitsMb {
		if mb < 1 || mb > 500 {
			return fmt.Errorf("uploadLimitsMb[%d]: %d MB is not between 1 and 500", i, mb)
		}
	}
	return nil
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
