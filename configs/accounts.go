package configs

import (
	"fmt"
	"strings"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/telegram"
)

// A channel account is one YAML map (channels.<channel>.accounts.<id>)
// holding two packages' keys side by side: the adapter's platform settings
// (token, endpoints, modes) and the account's access and room rules
// (dmPolicy, allowFrom, groupPolicy, the group rules, requireMention, room
// defaults). Each account type squashes both into that one map, so the YAML
// is flat and decoding stays strict: a key neither part knows is an error
// naming it. The adapter gets its part (telegram.New(id, acct.Config)); the
// assembler builds the access policy from Access() and hands adapters the
// answers they need of it as functions, so adapters never import access.

// TelegramAccount is channels.telegram.accounts.<id>.
type TelegramAccount struct {
	telegram.Config `mapstructure:",squash"`
	// Rules are the account's access and room rules: dmPolicy, allowFrom,
	// groupPolicy, groups (with their forum topics), requireMention and the
	// room defaults (historyLimit, streaming, ...).
	Rules access.Config `mapstructure:",squash"`
}

// Access returns the account's access configuration.
func (a TelegramAccount) Access() access.Config { return a.Rules }

// Validate checks the platform settings, then the rules; errors name the
// key relative to the account.
func (a TelegramAccount) Validate() error {
	if err := a.Config.Validate(); err != nil {
		return err
	}
	if err := a.Rules.Validate(); err != nil {
		return err
	}
	return a.Rules.CheckIDs(telegram.Name)
}

// validateBots refuses two accounts on one bot (the same token or the same
// tokenFile): they would poll it against each other, each poll ending the
// other's with 409, or take each other's webhook.
func (c TelegramChannel) validateBots() error {
	return oneBotEach("telegram", c.Accounts, func(a TelegramAccount) (string, string) { return a.Token, a.TokenFile })
}

// validateBots refuses two accounts on one bot: both would open a gateway
// session on its token and take every message twice (two replies).
func (c DiscordChannel) validateBots() error {
	return oneBotEach("discord", c.Accounts, func(a DiscordAccount) (string, string) { return a.Token, a.TokenFile })
}

// oneBotEach refuses two accounts of channel with the same token (or,
// without one, the same tokenFile), naming both; a token read from two
// different files is not compared.
func oneBotEach[A any](channel string, accounts map[string]A, creds func(A) (token, file string)) error {
	first := map[string]string{} // token or "file:"+tokenFile → the first account using it
	for _, id := range sortedKeys(accounts) {
		token, file := creds(accounts[id])
		key, bot := "token", strings.TrimSpace(token)
		if bot == "" {
			key, bot = "tokenFile", "file:"+file
		}
		if other, ok := first[bot]; ok {
			return fmt.Errorf("channels.%s.accounts.%s.%s: the same bot as account %s (one bot serves one account)", channel, id, key, other)
		}
		first[bot] = id
	}
	return nil
}

// DiscordAccount is channels.discord.accounts.<id>.
type DiscordAccount struct {
	discord.Config `mapstructure:",squash"`
	// Rules are the account's access and room rules, under Discord's names.
	Rules DiscordRules `mapstructure:",squash"`
}

// DiscordRules are a Discord account's access and room keys: those of
// access.Config, with the group rules under guilds (keyed by guild,
// channel or thread id: Discord ids are unique across kinds) and
// thread.inheritParent.
type DiscordRules struct {
	DMPolicy    access.DMPolicy    `mapstructure:"dmPolicy"`
	AllowFrom   []string           `mapstructure:"allowFrom"`
	GroupPolicy access.GroupPolicy `mapstructure:"groupPolicy"`
	// Guilds holds access rules keyed by guild, channel or thread id, or
	// "*"; a guild's channels refine it.
	Guilds map[string]access.GroupRule `mapstructure:"guilds"`
	// RequireMention gates guild messages on a mention of the bot; nil
	// means true.
	RequireMention *bool         `mapstructure:"requireMention"`
	Thread         DiscordThread `mapstructure:"thread"`
	// RoomDefaults are this account's settings for all its rooms
	// (historyLimit, streaming, errorPolicy, replyToMode, ackReaction).
	channels.RoomDefaults `mapstructure:",squash"`
}

// DiscordThread configures Discord threads (thread).
type DiscordThread struct {
	// InheritParent is what a new thread's session takes from the parent
	// channel's: false (nothing, the default), true or digest (its recent
	// messages as context), fork (a copy of its transcript); done by the
	// dispatcher.
	InheritParent channels.Inherit `mapstructure:"inheritParent"`
}

// Access returns the account's access configuration.
func (a DiscordAccount) Access() access.Config {
	r := a.Rules
	return access.Config{DMPolicy: r.DMPolicy, AllowFrom: r.AllowFrom, GroupPolicy: r.GroupPolicy,
		Groups: r.Guilds, RequireMention: r.RequireMention, GroupsKey: "guilds",
		Room: r.RoomDefaults, InheritParent: r.Thread.InheritParent}
}

// Validate checks the platform settings, then the rules; errors name the
// key relative to the account.
func (a DiscordAccount) Validate() error {
	if err := a.Config.Validate(); err != nil {
		return err
	}
	if err := a.Access().Validate(); err != nil {
		return err
	}
	return a.Access().CheckIDs(discord.Name)
}
