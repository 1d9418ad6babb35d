package configs

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/dispatch"
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
}

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

// HTTP is the operator API listener (SPEC §7).
type HTTP struct {
	Listen    string `mapstructure:"listen"`
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"tokenFile"`
	// Web enables the web channel's chat endpoint and page.
	Web bool `mapstructure:"web"`
	// AllowedHosts are the Host header values accepted besides the loopback
	// names (DNS-rebinding defence); AllowedOrigins the browser Origins
	// accepted besides the API's own (CSRF defence). "*" allows any.
	AllowedHosts   []string `mapstructure:"allowedHosts"`
	AllowedOrigins []string `mapstructure:"allowedOrigins"`
	// MaxConnections caps concurrent client connections (default 512).
	MaxConnections int `mapstructure:"maxConnections"`
}

// Log configures zap.
type Log struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"` // json | console
}

// Channels holds every channel's accounts.
type Channels struct {
	Telegram TelegramChannel `mapstructure:"telegram"`
	Discord  DiscordChannel  `mapstructure:"discord"`
}

// TelegramChannel is channels.telegram.
type TelegramChannel struct {
	Accounts map[string]telegram.Config `mapstructure:"accounts"`
}

// DiscordChannel is channels.discord.
type DiscordChannel struct {
	Accounts map[string]discord.Config `mapstructure:"accounts"`
}

// Agents is agents.defaults plus the agent list.
type Agents struct {
	Defaults agents.Defaults `mapstructure:"defaults"`
	List     []agents.Agent  `mapstructure:"list"`
}

// Session is the session configuration (SPEC §2, §3).
type Session struct {
	DMScope        routing.DMScope                 `mapstructure:"dmScope"`
	MainKey        string                          `mapstructure:"mainKey"`
	IdentityLinks  map[string][]string             `mapstructure:"identityLinks"`
	Reset          sessions.ResetPolicy            `mapstructure:"reset"`
	ResetByType    map[string]sessions.ResetPolicy `mapstructure:"resetByType"`
	ResetByChannel map[string]sessions.ResetPolicy `mapstructure:"resetByChannel"`
	ResetTriggers  []string                        `mapstructure:"resetTriggers"`
	Maintenance    sessions.Maintenance            `mapstructure:"maintenance"`
	LockTimeout    time.Duration                   `mapstructure:"lockTimeout"`
}

// Delivery is messages.delivery.
type Delivery struct {
	// MaxFailures counts turns that failed (store or transcript errors;
	// a model error is answered with a notice at once). Default 3.
	MaxFailures int `mapstructure:"maxFailures"`
	// MaxCrashes counts process deaths while the message's turn ran.
	// Default 5.
	MaxCrashes int `mapstructure:"maxCrashes"`
}

// Messages is the messages section.
type Messages struct {
	Queue dispatch.QueueConfig `mapstructure:"queue"`
	// Inbound joins a sender's quick messages (and Telegram's split of a
	// long paste) into one input before the turn.
	Inbound dispatch.InboundConfig `mapstructure:"inbound"`
	// Delivery bounds how often an accepted message is retried before it
	// is given up with a notice to its chat (SPEC §3.7).
	Delivery Delivery `mapstructure:"delivery"`
}

// ResetConfig returns the sessions package's view of the reset settings.
func (s Session) ResetConfig() sessions.ResetConfig {
	return sessions.ResetConfig{Reset: s.Reset, ResetByType: s.ResetByType,
		ResetByChannel: s.ResetByChannel, ResetTriggers: s.ResetTriggers}
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
			Telegram: TelegramChannel{Accounts: map[string]telegram.Config{}},
			Discord:  DiscordChannel{Accounts: map[string]discord.Config{}},
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
		Messages: Messages{Queue: dispatch.DefaultQueue(), Inbound: dispatch.DefaultInbound(), Delivery: Delivery{MaxFailures: 3, MaxCrashes: 5}},
		Limits:   limits.Default(),
	}
}

// Validate checks the whole configuration; errors name the key.
func (c *Config) Validate() error {
	if c.StateDir == "" {
		return fmt.Errorf("stateDir: must not be empty")
	}
	if err := c.Storage.Validate(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(c.HTTP.Listen)
	if c.HTTP.Listen != "" && err != nil {
		return fmt.Errorf("http.listen: %q: %w", c.HTTP.Listen, err)
	}
	if c.HTTP.Listen != "" {
		_, port, _ := net.SplitHostPort(c.HTTP.Listen)
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("http.listen: port %q is not a number from 0 to 65535", port)
		}
	}
	if c.HTTP.Listen != "" && !IsLoopback(host) && c.HTTP.Token == "" {
		return fmt.Errorf("http.token: required when http.listen (%s) is not a loopback address", c.HTTP.Listen)
	}
	if c.HTTP.Token != "" && strings.TrimSpace(c.HTTP.Token) != c.HTTP.Token {
		return fmt.Errorf("http.token: must not be blank or start or end with white space")
	}
	if c.HTTP.MaxConnections < 1 || c.HTTP.MaxConnections > 100000 {
		return fmt.Errorf("http.maxConnections: %d is not between 1 and 100000", c.HTTP.MaxConnections)
	}
	for i, h := range c.HTTP.AllowedHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/ ") {
			return fmt.Errorf("http.allowedHosts[%d]: %q is not a host name", i, h)
		}
	}
	for i, o := range c.HTTP.AllowedOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return fmt.Errorf("http.allowedOrigins[%d]: %q is not an origin such as https://example.com", i, o)
		}
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		return fmt.Errorf("log.format: %q is not json or console", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	for name, a := range c.Channels.Telegram.Accounts {
		if !routing.ValidID(name) {
			return fmt.Errorf("channels.telegram.accounts.%s: not a valid account id", name)
		}
		if err := a.Validate(); err != nil {
			return fmt.Errorf("channels.telegram.accounts.%s.%w", name, err)
		}
	}
	for name, a := range c.Channels.Discord.Accounts {
		if !routing.ValidID(name) {
			return fmt.Errorf("channels.discord.accounts.%s: not a valid account id", name)
		}
		if err := a.Validate(); err != nil {
			return fmt.Errorf("channels.discord.accounts.%s.%w", name, err)
		}
	}
	for name, p := range c.Providers {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("providers.%s.%w", name, err)
		}
	}
	if err := c.validateAgents(); err != nil {
		return err
	}
	if err := c.validateRoomAgents(); err != nil {
		return err
	}
	if err := c.RoutingConfig().Validate(); err != nil {
		return err
	}
	if err := c.Session.ResetConfig().Validate(); err != nil {
		return err
	}
	switch c.Session.Maintenance.Mode {
	case "enforce", "warn":
	default:
		return fmt.Errorf("session.maintenance.mode: %q is not enforce or warn", c.Session.Maintenance.Mode)
	}
	if c.Session.Maintenance.PruneAfter < 0 {
		return fmt.Errorf("session.maintenance.pruneAfter: %s must not be negative", c.Session.Maintenance.PruneAfter)
	}
	if c.Session.Maintenance.MaxEntries < 1 {
		return fmt.Errorf("session.maintenance.maxEntries: must be at least 1")
	}
	if c.Session.LockTimeout <= 0 {
		return fmt.Errorf("session.lockTimeout: must be positive")
	}
	if d := c.Messages.Delivery; d.MaxFailures < 1 || d.MaxFailures > 100 {
		return fmt.Errorf("messages.delivery.maxFailures: %d is not between 1 and 100", d.MaxFailures)
	} else if d.MaxCrashes < 1 || d.MaxCrashes > 100 {
		return fmt.Errorf("messages.delivery.maxCrashes: %d is not between 1 and 100", d.MaxCrashes)
	}
	for i, o := range c.Commands.Owners {
		if strings.TrimSpace(o) == "" || strings.ContainsAny(strings.TrimSpace(o), " \t") {
			return fmt.Errorf("commands.owners[%d]: %q is not a sender id", i, o)
		}
	}
	if err := c.Media.Validate(func(name string) string { return c.Providers[name].Type }); err != nil {
		return err
	}
	if err := c.Messages.Inbound.Validate(); err != nil {
		return err
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateMCP(); err != nil {
		return err
	}
	return c.Messages.Queue.Validate()
}

func (c *Config) validateAgents() error {
	d := c.Agents.Defaults
	// The runner's own check, so validate and reload refuse what run would.
	if err := d.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("agents.defaults: %w", err)
	}
	if d.Model.Primary == "" {
		return fmt.Errorf("agents.defaults.model: the primary model is empty (want provider/model)")
	}
	if err := c.checkModels("agents.defaults.model", d.Model); err != nil {
		return err
	}
	if d.ContextWindow < 1000 {
		return fmt.Errorf("agents.defaults.contextWindow: %d is too small", d.ContextWindow)
	}
	if d.MaxConcurrent < 1 {
		return fmt.Errorf("agents.defaults.maxConcurrent: must be at least 1")
	}
	if d.Subagents.MaxConcurrent < 1 {
		return fmt.Errorf("agents.defaults.subagents.maxConcurrent: must be at least 1")
	}
	if d.TimeoutSeconds < 1 {
		return fmt.Errorf("agents.defaults.timeoutSeconds: must be at least 1")
	}
	if len(c.Agents.List) == 0 {
		return fmt.Errorf("agents.list: at least one agent is required")
	}
	seen := map[string]bool{}
	for i, a := range c.Agents.List {
		id := strings.ToLower(a.ID)
		if !routing.ValidID(id) {
			return fmt.Errorf("agents.list[%d].id: %q is not a valid agent id", i, a.ID)
		}
		if seen[id] {
			return fmt.Errorf("agents.list[%d].id: %q appears twice", i, a.ID)
		}
		seen[id] = true
		if err := a.Tools.Validate(); err != nil {
			return fmt.Errorf("agents.list[%d].%w", i, err)
		}
		if err := c.checkModels(fmt.Sprintf("agents.list[%d].model", i), a.Model); err != nil {
			return err
		}
	}
	for i, b := range c.Bindings {
		if !seen[strings.ToLower(b.AgentID)] {
			return fmt.Errorf("bindings[%d].agentId: agent %q is not in agents.list", i, b.AgentID)
		}
	}
	return nil
}

// checkModels checks a model's primary and fallbacks against providers;
// the error names the bad key (agents.defaults.model.fallbacks[1]).
func (c *Config) checkModels(key string, m agents.Model) error {
	return agents.CheckModels(key, m, func(p string) bool {
		_, ok := c.Providers[p]
		return ok
	})
}

// IsLoopback reports whether host (from host:port) only listens on loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
