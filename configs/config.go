package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/websearch"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Config is the whole gateway configuration.
type Config struct {
	StateDir  string                        `mapstructure:"stateDir"`
	Storage   Storage                       `mapstructure:"storage"`
	HTTP      HTTP                          `mapstructure:"http"`
	Log       Log                           `mapstructure:"log"`
	Channels  Channels                      `mapstructure:"channels"`
	Providers map[string]llm.ProviderConfig `mapstructure:"providers"`
	Agents    Agents                        `mapstructure:"agents"`
	Bindings  []routing.Binding             `mapstructure:"bindings"`
	Session   Session                       `mapstructure:"session"`
	Messages  Messages                      `mapstructure:"messages"`
	Commands  Commands                      `mapstructure:"commands"`
	Media     dispatch.MediaConfig          `mapstructure:"media"`
	Limits    limits.Config                 `mapstructure:"limits"`
	MCP       mcp.Config                    `mapstructure:"mcp"`
	Jobs      jobs.Config                   `mapstructure:"jobs"`
	WebSearch websearch.Config              `mapstructure:"webSearch"`

	// envShadowed are the notices of keys the file sets that a GATEWAY_*
	// variable overrides (EnvShadowed).
	envShadowed []string
	// envUnknown are the notices of GATEWAY_* variables that name no key
	// (among Notices).
	envUnknown []string
}

// EnvShadowed names the keys the file sets that a GATEWAY_* variable
// overrides, with the variable: the environment's value is the one in
// force, so an edit of such a key in the file changes nothing (a reload
// says so instead of nothing). Also among Notices.
func (c *Config) EnvShadowed() []string { return c.envShadowed }

// Commands is the commands section.
type Commands struct {
	// Owners may run /new, /reset, /switch and /delete in any group the
	// bot admits them in ("telegram:123", "discord:456", or a bare id for
	// every channel). In groups nobody else may, except senders listed in
	// that group's own allowFrom.
	Owners []string `mapstructure:"owners"`
	// PlatformAdmins lets a group's administrators on the platform run
	// them too (Telegram: the chat's creator and administrators; Discord:
	// the guild's owner and members with Administrator, Manage Server or
	// Manage Channels in the channel), asked of the platform only when such
	// a command comes and remembered for a minute. Off by default.
	PlatformAdmins bool `mapstructure:"platformAdmins"`
}

// Validate checks the commands section.
func (c Commands) Validate() error {
	for i, o := range c.Owners {
		if strings.TrimSpace(o) == "" || strings.ContainsAny(strings.TrimSpace(o), " \t") {
			return fmt.Errorf("commands.owners[%d]: %q is not a sender id", i, o)
		}
		if err := access.CheckOwner(o); err != nil {
			return fmt.Errorf("commands.owners[%d]: %w", i, err)
		}
	}
	return nil
}

// Log configures zap.
type Log struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"` // json | console
}

// Validate checks the log section.
func (l Log) Validate() error {
	switch l.Format {
	case "json", "console":
	default:
		return fmt.Errorf("log.format: %q is not json or console", l.Format)
	}
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not debug, info, warn or error", l.Level)
	}
	return nil
}

// Channels holds every channel's accounts.
type Channels struct {
	Telegram TelegramChannel `mapstructure:"telegram"`
	Discord  DiscordChannel  `mapstructure:"discord"`
	Web      WebChannel      `mapstructure:"web"`
}

// WebChannel is channels.web (the chat itself is on with http.web).
type WebChannel struct {
	// SenderIdentity is who a web chat message is from for the
	// per-sender limits: token (everyone presenting the API token is one
	// sender; the default), cookie (a signed cookie per browser, its key
	// in <stateDir>/web/sender.key) or address (the client address). Read
	// at start.
	SenderIdentity string `mapstructure:"senderIdentity"`
}

// Validate checks channels.web.
func (w WebChannel) Validate() error {
	switch w.SenderIdentity {
	case "token", "cookie", "address":
		return nil
	}
	return fmt.Errorf("channels.web.senderIdentity: %q: want token, cookie or address", w.SenderIdentity)
}

// TelegramChannel is channels.telegram.
type TelegramChannel struct {
	Accounts map[string]TelegramAccount `mapstructure:"accounts"`
}

// DiscordChannel is channels.discord.
type DiscordChannel struct {
	Accounts map[string]DiscordAccount `mapstructure:"accounts"`
}

// RoutingConfig returns routing's view, with the first agent as default.
func (c *Config) RoutingConfig() routing.Config {
	def := "main"
	if len(c.Agents.List) > 0 {
		def = strings.ToLower(c.Agents.List[0].ID)
	}
	return routing.Config{DefaultAgent: def, DMScope: c.Session.DMScope, MainKey: c.Session.MainKey,
		IdentityLinks: c.Session.IdentityLinks, Bindings: c.Bindings}
}

// Default returns the configuration used for every key the file omits.
func Default() *Config {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "."
	}
	return &Config{
		StateDir: filepath.Join(home, ".gateway"),
		Storage:  defaultStorage(),
		Media:    dispatch.DefaultMedia(),
		HTTP:     HTTP{Listen: "127.0.0.1:8787", Web: true, MaxConnections: 512},
		Log:      Log{Level: "info", Format: "json"},
		Channels: Channels{
			Telegram: TelegramChannel{Accounts: map[string]TelegramAccount{}},
			Discord:  DiscordChannel{Accounts: map[string]DiscordAccount{}},
			Web:      WebChannel{SenderIdentity: "token"},
		},
		Providers: map[string]llm.ProviderConfig{"local": {Type: "echo"}},
		Agents: Agents{
			Defaults: agents.Defaults{
				Model: agents.Model{Primary: "local/echo"}, ContextWindow: 200000, MaxConcurrent: 4, TimeoutSeconds: 600,
				Compaction: agents.Compaction{ReserveTokens: 20000, KeepRecentTokens: 20000},
				Subagents:  agents.Subagents{MaxConcurrent: 8},
			},
			List: []agents.Agent{{ID: "main"}},
		},
		Session: Session{
			DMScope: routing.ScopePerChannelPeer, MainKey: "main", IdentityLinks: map[string][]string{},
			Reset:          sessions.ResetPolicy{Mode: sessions.ResetOff},
			ResetByType:    map[string]sessions.ResetPolicy{},
			ResetByChannel: map[string]sessions.ResetPolicy{},
			ResetTriggers:  []string{"/new", "/reset"},
			Maintenance: sessions.Maintenance{Mode: "enforce", PruneAfter: 720 * time.Hour, MaxEntries: 5000,
				ArchiveRetention: 720 * time.Hour},
			LockTimeout: 10 * time.Second,
		},
		Messages: Messages{Queue: dispatch.DefaultQueue(), Inbound: dispatch.DefaultInbound(), Delivery: Delivery{MaxFailures: 3, MaxCrashes: 5, DeadLetters: 1000}},
		Limits:   limits.Default(),
		Jobs:     jobs.Default(),
	}
}

// Validate checks the whole configuration; errors name the key. Each
// section checks itself (its type's Validate); what is left here spans
// sections: the models' providers, the agents that bindings, rooms, limits
// and tools name, and the media transcriber's provider.
func (c *Config) Validate() error {
	if c.StateDir == "" {
		return fmt.Errorf("stateDir: must not be empty")
	}
	for _, section := range []interface{ Validate() error }{c.Storage, c.HTTP, c.Log, c.Channels} {
		if err := section.Validate(); err != nil {
			return err
		}
	}
	for name, p := range c.Providers {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("providers.%s.%w", name, err)
		}
	}
	if err := c.Agents.Validate(); err != nil {
		return err
	}
	if err := c.validateAgentRefs(); err != nil {
		return err
	}
	if err := c.validateRoomAgents(); err != nil {
		return err
	}
	if err := c.RoutingConfig().Validate(); err != nil {
		return err
	}
	for _, section := range []interface{ Validate() error }{c.Session, c.Messages, c.Commands, c.Jobs} {
		if err := section.Validate(); err != nil {
			return err
		}
	}
	if err := c.Media.Validate(func(name string) string { return c.Providers[name].Type }); err != nil {
		return err
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateWebSearch(); err != nil {
		return err
	}
	return c.validateMCP()
}
