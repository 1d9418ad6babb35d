package main

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
)

// TestDocumentedAllowListFormsReachThePolicy: every allow-list form the
// example config documents — an empty rule for one group, for every group
// ("*"), for one Discord guild — survives loading and lets that group in.
func TestDocumentedAllowListFormsReachThePolicy(t *testing.T) {
	tests := []struct {
		name, yaml string
		in         channels.Inbound
	}{
		{"telegram group", `channels: {telegram: {accounts: {default: {token: "1:x", groupPolicy: allowlist, groups: {"-1001234": {}}}}}}`,
			channels.Inbound{Channel: "telegram", AccountID: "default", ChatID: "-1001234", ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
		{"telegram any group", `channels: {telegram: {accounts: {default: {token: "1:x", groupPolicy: allowlist, groups: {"*": {}}}}}}`,
			channels.Inbound{Channel: "telegram", AccountID: "default", ChatID: "-100999", ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
		{"discord guild", `channels: {discord: {accounts: {default: {token: "x", groupPolicy: allowlist, guilds: {"555": {}}}}}}`,
			channels.Inbound{Channel: "discord", AccountID: "default", ChatID: "42", GuildID: "555", ChatType: channels.Group, SenderID: "7", Mentioned: true, Text: "hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+tt.yaml+"\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := accessPolicy(cfg, nil, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Check(tt.in); !d.Allowed() {
				t.Fatalf("group message refused: %+v", d)
			}
			other := tt.in
			other.ChatID, other.GuildID = "-100777", "777"
			if tt.name != "telegram any group" {
				if d := p.Check(other); d.Allowed() {
					t.Errorf("a group not listed was let in")
				}
			}
		})
	}
}

// TestOneValidationPathRefusesWhatRunRefuses: what `run` cannot start with
// is refused by the loader that `config validate` and hot reload use too,
// with the key as typed and its position.
func TestOneValidationPathRefusesWhatRunRefuses(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"reserve tokens beyond the window", "agents: {defaults: {compaction: {reserveTokens: 300000}}}", "reserveTokens"},
		{"negative pruneAfter", "session: {maintenance: {pruneAfter: -1h}}", "pruneAfter"},
		{"negative tokens", "agents: {defaults: {compaction: {keepRecentTokens: -5}}}", "keepRecentTokens"},
		{"port out of range", "http: {listen: '127.0.0.1:99999'}", "http.listen"},
		{"bool for an hour", "session: {reset: {mode: daily, atHour: true}}", "atHour"},
		{"number for a list", "session: {resetTriggers: 5}", "resetTriggers"},
		{"unknown key with an empty map", "sesion: {}", `line 2 column 1: unknown key "sesion" in the top level (did you mean "session"?)`},
		{"misspelled key keeps its case", "session: {dmScop: main}", `unknown key "dmScop" in session (did you mean "dmScope"?)`},
		{"deep nesting", "deep: " + strings.Repeat("[", 3000) + strings.Repeat("]", 3000), "nesting deeper than 64"},
		{"deep maps", "deep: " + strings.Repeat("{a: ", 3000) + "1" + strings.Repeat("}", 3000), "nesting deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+tt.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestReloadNamesChannelAccountChangesNeedingRestart: allow-list edits
// apply at once and are not reported; a new bot or a changed token is
// named as needing a restart.
func TestReloadNamesChannelAccountChangesNeedingRestart(t *testing.T) {
	load := func(y string) *configs.Config {
		t.Helper()
		c, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+y), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := load(`channels: {telegram: {accounts: {default: {token: "1:a", allowFrom: ["1"]}}}}`)
	if got := restartOnly(base, load(`channels: {telegram: {accounts: {default: {token: "1:a", allowFrom: ["1", "2"], groups: {"*": {}}}}}}`)); len(got) != 0 {
		t.Errorf("access edits reported as needing a restart: %v", got)
	}
	got := restartOnly(base, load(`channels: {telegram: {accounts: {default: {token: "1:b"}, second: {token: "2:c"}}}, discord: {accounts: {default: {token: "d"}}}}`))
	want := []string{"channels.telegram.accounts.default", "channels.telegram.accounts.second (added)", "channels.discord.accounts.default (added)"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("restartOnly = %v, missing %q", got, w)
		}
	}
}
