package configs

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
)

// TestTelegramAccountRules: a Telegram account's access keys decode into its
// Rules (access.Config) with access's defaults: pairing DMs, allowlisted
// groups, mention required unless a group's rule says otherwise. (These
// were channels/telegram's TestConfigDefaults assertions while its Config
// carried the rules.)
func TestTelegramAccountRules(t *testing.T) {
	c, err := LoadBytes([]byte("channels: {telegram: {accounts: {default: {token: '1:a', groups: {'-100': {requireMention: false}}}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Channels.Telegram.Accounts["default"]
	if a.Token != "1:a" {
		t.Errorf("platform key not decoded: %+v", a.Config)
	}
	r := a.Access().WithDefaults()
	if r.DMPolicy != access.DMPairing || r.GroupPolicy != access.GroupAllowlist {
		t.Errorf("defaults: %+v", r)
	}
	group := func(chat string) channels.Inbound {
		return channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: chat}, ChatType: channels.Group}
	}
	if r.MentionRequired(group("-100")) || !r.MentionRequired(group("-200")) {
		t.Error("per-group requireMention not applied")
	}
}

// TestAccountsCompose: one account map holds the adapter's keys and the
// rules side by side, each decoded into its part; Discord's rules keep
// their names (guilds, thread.inheritParent).
func TestAccountsCompose(t *testing.T) {
	c, err := LoadBytes([]byte(`channels:
  telegram:
    accounts:
      default:
        token: '1:a'
        mode: polling
        dmPolicy: allowlist
        allowFrom: ["42"]
        groupPolicy: open
        requireMention: false
        historyLimit: 7
        groups: {"-100": {topics: {"3": {requireMention: true}}}}
  discord:
    accounts:
      default:
        token: t
        slashCommands: global
        dmPolicy: open
        groupPolicy: allowlist
        guilds: {"555": {channels: {"777": {allowFrom: ["9"]}}}}
        thread: {inheritParent: true}
        historyLimit: 3
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Channels.Telegram.Accounts["default"]
	if tg.Token != "1:a" || tg.Mode != "polling" {
		t.Errorf("telegram platform part: %+v", tg.Config)
	}
	ta := tg.Access()
	if ta.DMPolicy != access.DMAllowlist || len(ta.AllowFrom) != 1 || ta.GroupPolicy != access.GroupOpen ||
		ta.RequireMention == nil || *ta.RequireMention || ta.Room.HistoryLimit == nil || *ta.Room.HistoryLimit != 7 ||
		ta.Groups["-100"].Topics["3"].RequireMention == nil {
		t.Errorf("telegram rules: %+v", ta)
	}
	dc := c.Channels.Discord.Accounts["default"]
	if dc.Token != "t" || dc.SlashCommands != "global" {
		t.Errorf("discord platform part: %+v", dc.Config)
	}
	da := dc.Access()
	if da.DMPolicy != access.DMOpen || da.GroupsKey != "guilds" || da.InheritParent != channels.InheritDigest ||
		len(da.Groups["555"].Channels["777"].AllowFrom) != 1 || da.Room.HistoryLimit == nil || *da.Room.HistoryLimit != 3 {
		t.Errorf("discord rules: %+v", da)
	}
}

// TestAccountKeysStrict: decoding an account stays strict across its two
// parts: a key neither knows, or one of the other platform's, is an error
// naming it; invalid rules are named under the account. (The policy
// cases were channels/telegram's TestConfigValidateNamesKey and
// channels/discord's TestConfigValidate cases while their Configs carried
// the rules.)
func TestAccountKeysStrict(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"unknown telegram key", "channels: {telegram: {accounts: {default: {token: '1:a', dmPolicyy: open}}}}\n", `.dmPolicyy: unknown key`},
		{"guilds on telegram", "channels: {telegram: {accounts: {default: {token: '1:a', guilds: {}}}}}\n", `.guilds: unknown key`},
		{"groups on discord", "channels: {discord: {accounts: {default: {token: t, groups: {}}}}}\n", `.groups: unknown key`},
		{"apiRoot on discord", "channels: {discord: {accounts: {default: {token: t, apiRoot: 'https://x'}}}}\n", `.apiRoot: unknown key`},
		{"unknown rule key", "channels: {telegram: {accounts: {default: {token: '1:a', groups: {'-1': {mention: true}}}}}}\n", `.mention: unknown key`},
		{"bad telegram dm policy", "channels: {telegram: {accounts: {default: {token: '1:a', dmPolicy: everyone}}}}\n", "channels.telegram.accounts.default.dmPolicy:"},
		{"bad telegram group policy", "channels: {telegram: {accounts: {default: {token: '1:a', groupPolicy: pairing}}}}\n", "channels.telegram.accounts.default.groupPolicy:"},
		{"bad discord dm policy", "channels: {discord: {accounts: {default: {token: x, dmPolicy: maybe}}}}\n", "channels.discord.accounts.default.dmPolicy:"},
		{"bad guild rule", "channels: {discord: {accounts: {default: {token: x, guilds: {'1': {allowFrom: ['']}}}}}}\n", "channels.discord.accounts.default.guilds.1.allowFrom[0]:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tt.yaml), nil)
			if err == nil {
				t.Fatalf("accepted %q", tt.yaml)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %q", err, tt.want)
			}
		})
	}
}

// TestAccountsNeedTheirOwnBot: two accounts on one bot (the same token,
// or the same tokenFile) would poll it against each other (Telegram: each
// getUpdates ending the other's with 409, or stealing the other's webhook)
// or open two gateway sessions on it and take every message twice
// (Discord: two replies): the config is refused, naming both accounts.
func TestAccountsNeedTheirOwnBot(t *testing.T) {
	for _, tc := range []struct {
		channel, name, a, b, want string
	}{
		{"telegram", "same token", "token: '1:a'", "token: '1:a'", "channels.telegram.accounts.b.token: the same bot as account a"},
		{"telegram", "same tokenFile", "tokenFile: /run/secrets/tg", "tokenFile: /run/secrets/tg", "channels.telegram.accounts.b.tokenFile: the same bot as account a"},
		{"telegram", "two bots", "token: '1:a'", "token: '2:b'", ""},
		{"discord", "same token", "token: 'abc'", "token: ' abc '", "channels.discord.accounts.b.token: the same bot as account a"},
		{"discord", "same tokenFile", "tokenFile: /run/secrets/dc", "tokenFile: /run/secrets/dc", "channels.discord.accounts.b.tokenFile: the same bot as account a"},
		{"discord", "two bots", "token: 'abc'", "token: 'def'", ""},
	} {
		t.Run(tc.channel+" "+tc.name, func(t *testing.T) {
			yaml := "channels: {" + tc.channel + ": {accounts: {a: {" + tc.a + "}, b: {" + tc.b + "}}}}\n"
			_, err := LoadBytes([]byte(yaml), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
