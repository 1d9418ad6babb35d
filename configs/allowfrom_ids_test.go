package configs

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
)

// TestAllowFromThatCanMatchNoSenderIsAnError: Telegram and Discord name
// senders and rooms by number. An allowFrom entry written as a username,
// or with a prefix of no channel, loaded without a word and refused the
// very person it was written for; it is an error naming the key. Entries
// of another channel (a shared list) and the documented forms load.
func TestAllowFromThatCanMatchNoSenderIsAnError(t *testing.T) {
	bad := []struct{ name, yaml, key string }{
		{"telegram username", `telegram: {accounts: {default: {token: '1:a', dmPolicy: allowlist, allowFrom: ["123", "@alice"]}}}`,
			"channels.telegram.accounts.default.allowFrom[1]"},
		{"telegram bare name", `telegram: {accounts: {default: {token: '1:a', allowFrom: [alice]}}}`,
			"channels.telegram.accounts.default.allowFrom[0]"},
		{"telegram unknown prefix", `telegram: {accounts: {default: {token: '1:a', allowFrom: ["user:123"]}}}`,
			"channels.telegram.accounts.default.allowFrom[0]"},
		{"telegram group's list", `telegram: {accounts: {default: {token: '1:a', groups: {"-100": {allowFrom: ["@bob"]}}}}}`,
			"channels.telegram.accounts.default.groups.-100.allowFrom[0]"},
		{"telegram topic's list", `telegram: {accounts: {default: {token: '1:a', groups: {"-100": {topics: {"3": {allowFrom: ["bob"]}}}}}}}`,
			"channels.telegram.accounts.default.groups.-100.topics.3.allowFrom[0]"},
		{"telegram group by username", `telegram: {accounts: {default: {token: '1:a', groups: {"@mygroup": {}}}}}`,
			"channels.telegram.accounts.default.groups"},
		{"discord username", `discord: {accounts: {default: {token: t, dmPolicy: allowlist, allowFrom: ["alice"]}}}`,
			"channels.discord.accounts.default.allowFrom[0]"},
		{"discord channel by name", `discord: {accounts: {default: {token: t, guilds: {"555": {channels: {general: {}}}}}}}`,
			"channels.discord.accounts.default.guilds.555.channels"},
		{"discord negative id", `discord: {accounts: {default: {token: t, allowFrom: ["-5"]}}}`,
			"channels.discord.accounts.default.allowFrom[0]"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte("channels: {"+tt.yaml+"}\n"), nil)
			if err == nil {
				t.Fatal("loaded; want an error naming the entry")
			}
			if !strings.Contains(err.Error(), tt.key+":") {
				t.Fatalf("error %q does not name %s", err, tt.key)
			}
		})
	}

	good := []struct {
		name, yaml, channel, sender string
	}{
		{"telegram numbers", `telegram: {accounts: {default: {token: '1:a', dmPolicy: allowlist, allowFrom: [123, "-1001", "*"]}}}`, "telegram", "123"},
		{"telegram prefixed", `telegram: {accounts: {default: {token: '1:a', dmPolicy: allowlist, allowFrom: ["telegram:123"]}}}`, "telegram", "123"},
		{"telegram tg prefix", `telegram: {accounts: {default: {token: '1:a', dmPolicy: allowlist, allowFrom: ["tg:123"]}}}`, "telegram", "123"},
		{"shared list", `telegram: {accounts: {default: {token: '1:a', dmPolicy: allowlist, allowFrom: ["discord:9", " 123 "]}}}`, "telegram", "123"},
		{"discord mention form", `discord: {accounts: {default: {token: t, dmPolicy: allowlist, allowFrom: ["<@!123>", "telegram:@x"]}}}`, "discord", "123"},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadBytes([]byte("channels: {"+tt.yaml+"}\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var rules access.Config
			if tt.channel == "telegram" {
				rules = c.Channels.Telegram.Accounts["default"].Access()
			} else {
				rules = c.Channels.Discord.Accounts["default"].Access()
			}
			p, err := access.New(map[access.Account]access.Config{{Channel: tt.channel, AccountID: "default"}: rules}, access.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in := channels.Inbound{Address: channels.Address{Channel: tt.channel, AccountID: "default", ChatID: tt.sender},
				ChatType: channels.Direct, SenderID: tt.sender, CaseSensitive: true, Mentioned: true, Text: "hi"}
			if d := p.Check(in); !d.Allowed() {
				t.Fatalf("sender %s refused: %+v", tt.sender, d)
			}
		})
	}
}

// TestOwnerNamedByUsernameIsAnError: a commands.owners entry naming
// Telegram or Discord must be a numeric id ("telegram:@alice" privileged
// nobody, without a word); bare entries (any channel's, a web sender's
// too) and ids load.
func TestOwnerNamedByUsernameIsAnError(t *testing.T) {
	for _, o := range []string{"telegram:@alice", "tg:alice", "discord:bob"} {
		if _, err := LoadBytes([]byte(`commands: {owners: ["7", "`+o+`"]}`+"\n"), nil); err == nil || !strings.Contains(err.Error(), "commands.owners[1]:") {
			t.Errorf("owner %q: err %v, want one naming commands.owners[1]", o, err)
		}
	}
	if _, err := LoadBytes([]byte(`commands: {owners: ["telegram:7", "tg:8", "discord:<@9>", "addr-2001:db8::1", "alice"]}`+"\n"), nil); err != nil {
		t.Fatal(err)
	}
}
