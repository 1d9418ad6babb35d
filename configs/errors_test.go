package configs

import (
	"strings"
	"testing"
)

// TestErrorsInOneStyle: every refusal names where (file position or the
// variable), the key as typed, what was expected and a suggestion.
func TestErrorsInOneStyle(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"list for a number", "http:\n  maxConnections: [1, 2]\n", nil,
			"config: line 3 column 3: http.maxConnections: expected a whole number, got a list"},
		{"yes for a boolean", "channels:\n  telegram:\n    accounts:\n      default: {token: '1:a', RequireMention: yes}\n", nil,
			`config: line 5 column 31: channels.telegram.accounts.default.RequireMention: expected true or false, got "yes" (write true or false`},
		{"duration without unit", "session: {lockTimeout: 10}\n", nil,
			"config: line 2 column 11: session.lockTimeout: 10 has no unit (write 10s for seconds)"},
		{"duration misspelled", "session: {lockTimeout: 10 sec}\n", nil,
			`config: line 2 column 11: session.lockTimeout: "10 sec" is not a duration (write it with a unit, like 500ms, 90s, 5m or 1h30m)`},
		{"enum", "log: {format: jsn}\n", nil,
			`config: line 2 column 7: log.format: "jsn" is not json or console (did you mean "json"?)`},
		{"agent id", "agents:\n  list: [{id: Main}]\n", nil,
			`config: line 3 column 11: agents.list[0].id: "Main" is not an agent id: lower-case letters, digits, '_' and '-', starting with a letter or digit, at most 64 (did you mean "main"?)`},
		{"account id", "channels: {telegram: {accounts: {Bot1: {token: '1:a'}}}}\n", nil,
			`config: line 2 column 34: channels.telegram.accounts.Bot1: "Bot1" is not an account id`},
		{"text for a number from the environment", "", []string{"GATEWAY_HTTP_MAX_CONNECTIONS=lots"},
			`config: env GATEWAY_HTTP_MAX_CONNECTIONS: http.maxConnections: expected a whole number, got the text "lots"`},
		{"enum from the environment", "", []string{"GATEWAY_SESSION_DM_SCOPE=per-peeer"},
			`config: env GATEWAY_SESSION_DM_SCOPE: session.dmScope: "per-peeer" is not main, per-peer, per-channel-peer, per-account-channel-peer or global (did you mean "per-peer"?)`},
		{"yaml syntax", "http: [\n", nil, "config: line 2 column 1: YAML syntax:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte("stateDir: /tmp/x\n"+tt.yaml), tt.env)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error:\n got %v\nwant %s...", err, tt.want)
			}
		})
	}
}

// TestLoadNamesThePathOnce: a --config that is missing or a directory is
// an error naming the path once ("config: read /x: read /x: is a
// directory" said it twice).
func TestLoadNamesThePathOnce(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir, dir + "/missing.yaml"} {
		_, err := Load(p)
		if err == nil {
			t.Fatalf("Load(%s) succeeded", p)
		}
		if n := strings.Count(err.Error(), p); n != 1 {
			t.Errorf("Load(%s): %q names the path %d times, want once", p, err, n)
		}
	}
}
