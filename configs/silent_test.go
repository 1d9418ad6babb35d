package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenAndTokenFileBothRefused: http.token and http.tokenFile (and a
// Telegram account's token and tokenFile) both in the file are refused,
// as storage.postgres.url/urlFile and a Discord account's are: the token
// won and the file was ignored in silence.
func TestTokenAndTokenFileBothRefused(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"http", "http: {token: old, tokenFile: /run/secrets/http}\n",
			"config: line 1 column 20: http.tokenFile: set either token or tokenFile, not both"},
		{"telegram", "channels: {telegram: {accounts: {default: {token: \"1:old\", tokenFile: /run/secrets/tg}}}}\n",
			"config: line 1 column 60: channels.telegram.accounts.default.tokenFile: set either token or tokenFile, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tt.yaml), nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestEnvSecretReplacesTheFilesOtherWay: a secret the environment gives
// one way replaces the file's other way of giving it, as the environment
// overrides any key, with a notice. The file's token won over
// GATEWAY_HTTP_TOKEN_FILE (and GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_*_TOKEN_FILE)
// in silence, so moving a token out of the YAML with the deploy units'
// variable kept the old one in force; a provider's apiKey beside
// GATEWAY_PROVIDERS_*_API_KEY_FILE was refused. GATEWAY_HTTP_TOKEN (the
// CLI's, README) still wins over the file's tokenFile.
func TestEnvSecretReplacesTheFilesOtherWay(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("123:new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := []byte(`
http: {token: old}
channels: {telegram: {accounts: {default: {token: "1:old"}}}}
providers: {oa: {type: openai, baseURL: "https://api.example.com/v1", apiKey: old}}
`)
	c, err := LoadBytes(yaml, []string{"GATEWAY_HTTP_TOKEN_FILE=" + secret,
		"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN_FILE=" + secret, "GATEWAY_PROVIDERS_OA_API_KEY_FILE=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Token != "123:new" {
		t.Errorf("http token %q, want the file's 123:new", c.HTTP.Token)
	}
	tg := c.Channels.Telegram.Accounts["default"].Config
	if tok, err := tg.ResolveToken(); err != nil || tok != "123:new" {
		t.Errorf("telegram token %q (%v), want 123:new", tok, err)
	}
	if p := c.Providers["oa"]; p.APIKey != "" || p.APIKeyFile != secret {
		t.Errorf("provider apiKey %q, apiKeyFile %q", p.APIKey, p.APIKeyFile)
	}
	notices := strings.Join(c.Notices(), "\n")
	for _, w := range []string{"http.token: set in the file, but GATEWAY_HTTP_TOKEN_FILE gives this secret another way",
		"channels.telegram.accounts.default.token: set in the file, but GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN_FILE",
		"providers.oa.apiKey: set in the file, but GATEWAY_PROVIDERS_OA_API_KEY_FILE"} {
		if !strings.Contains(notices, w) {
			t.Errorf("notices lack %q:\n%s", w, notices)
		}
	}

	c, err = LoadBytes([]byte("http: {tokenFile: /run/credentials/gateway.service/http-token}\n"), []string{"GATEWAY_HTTP_TOKEN=cli"})
	if err != nil || c.HTTP.Token != "cli" {
		t.Fatalf("GATEWAY_HTTP_TOKEN over the file's tokenFile: %v, token %q", err, c.HTTP.Token)
	}
	// An empty variable (compose's ${UNSET}) gives no secret: the file's
	// tokenFile is not dropped for it.
	c, err = LoadBytes([]byte("http: {tokenFile: "+secret+"}\n"), []string{"GATEWAY_HTTP_TOKEN="})
	if err != nil || c.HTTP.Token != "123:new" {
		t.Fatalf("empty GATEWAY_HTTP_TOKEN beside the file's tokenFile: %v, token %q", err, c.HTTP.Token)
	}
	_, err = LoadBytes(nil, []string{"GATEWAY_HTTP_TOKEN=a", "GATEWAY_HTTP_TOKEN_FILE=" + secret})
	if err == nil || !strings.Contains(err.Error(), "set either token or tokenFile, not both") {
		t.Fatalf("both from the environment: %v", err)
	}
}

// TestNumberLiteralInTextKeyRefused: a number the YAML reads differently
// from how it is written (0123 is octal 83, 0x1F is 31, 1e3 is 1000)
// filled a text key with the number's digits, silently not what the file
// says; it is refused with the quoted text as the fix. Numbers written as
// their digits (ids) still fill text keys.
func TestNumberLiteralInTextKeyRefused(t *testing.T) {
	for _, lit := range []string{"0123", "0x1F", "1e3", "+5", "1.50", "0o17"} {
		_, err := LoadBytes([]byte("http: {token: "+lit+"}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "http.token") || !strings.Contains(err.Error(), `"`+lit+`"`) {
			t.Errorf("token: %s: err = %v", lit, err)
		}
	}
	c, err := LoadBytes([]byte("http: {token: 12345}\nchannels: {telegram: {accounts: {default: {token: \"1:a\", groups: {-100123: {}}, allowFrom: [42, -7]}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Token != "12345" || len(c.Channels.Telegram.Accounts["default"].Rules.AllowFrom) != 2 {
		t.Fatalf("token %q, account %+v", c.HTTP.Token, c.Channels.Telegram.Accounts["default"])
	}
}

// TestKeyTwiceInOtherCaseRefused: a key written twice in different case
// (the decoder reads keys without case) is refused at the second, naming
// the first; it was "http: has invalid keys: LISTEN" at the section, and
// which of two spellings neither matching exactly was named varied from
// run to run.
func TestKeyTwiceInOtherCaseRefused(t *testing.T) {
	_, err := LoadBytes([]byte("http:\n  Listen: 127.0.0.1:1\n  LISTEN: 127.0.0.1:2\n"), nil)
	want := "config: line 3 column 3: http.LISTEN: set twice, also as Listen at line 2: keys are read without case (keep one of them)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestTimezoneByAgentNamesAnAgent: jobs.timezoneByAgent keyed by an id
// that is no agent (a typo, or Main for main: the lookup is by the
// normalised id) applied to nobody in silence; it is refused, as
// limits.agents is.
func TestTimezoneByAgentNamesAnAgent(t *testing.T) {
	for _, id := range []string{"mian", "Main"} {
		_, err := LoadBytes([]byte("jobs: {timezoneByAgent: {"+id+": Europe/Berlin}}\n"), nil)
		want := "jobs.timezoneByAgent." + id + `: no agent "` + id + `" in agents.list`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", id, err, want)
		}
	}
	c, err := LoadBytes([]byte("jobs: {timezoneByAgent: {main: Europe/Berlin}}\n"), nil)
	if err != nil || c.Jobs.TimeZoneByAgent["main"] != "Europe/Berlin" {
		t.Fatalf("main: %v", err)
	}
}

// TestNumberOrDateKeyOrTextRefused: a map key YAML reads as a number
// other than as written (groups: {0123: {}} was the group "83") is refused
// with the quoted key as the fix; a date in a text key is refused saying
// so (it was "expected type 'string', got unconvertible type 'time.Time'").
func TestNumberOrDateKeyOrTextRefused(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"channels: {telegram: {accounts: {default: {token: '1:a', groups: {0123: {}}}}}}\n",
			`config: line 1 column 67: channels.telegram.accounts.default.groups.0123: the key 0123 reads as the number 83 (quote it if you mean the text: "0123")`},
		{"http: {token: 2024-01-01}\n",
			`config: line 1 column 8: http.token: expected text, got the date 2024-01-01 (quote it if you mean the text: "2024-01-01")`},
	}
	for _, tt := range tests {
		_, err := LoadBytes([]byte(tt.yaml), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: err = %v\nwant %s", tt.yaml, err, tt.want)
		}
	}
	c, err := LoadBytes([]byte("channels: {telegram: {accounts: {default: {token: '1:a', groups: {-100123: {}, \"0123\": {}}}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Channels.Telegram.Accounts["default"].Rules.Groups; len(g) != 2 {
		t.Fatalf("groups %v", g)
	}
}

// TestYAMLMergeKeys: a YAML merge key (<<: *anchor) shares settings
// between accounts as YAML means it to; it was refused as "unknown key".
// What it merges is checked like the mapping's own keys.
func TestYAMLMergeKeys(t *testing.T) {
	c, err := LoadBytes([]byte(`
channels:
  telegram:
    accounts:
      default: &bot {token: "1:a", dmPolicy: allowlist, allowFrom: ["42"]}
      second: {<<: *bot, token: "2:b"}
      third:
        <<: [*bot]
        token: "3:c"
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, tok := range map[string]string{"second": "2:b", "third": "3:c"} {
		a := c.Channels.Telegram.Accounts[id]
		if a.Token != tok || a.Rules.DMPolicy != "allowlist" || len(a.Rules.AllowFrom) != 1 {
			t.Errorf("%s: token %q, rules %+v", id, a.Token, a.Rules)
		}
	}
	_, err = LoadBytes([]byte("x: &d {requireMentoin: true}\n"), nil)
	if err == nil {
		t.Fatal("an unknown top key loaded")
	}
	_, err = LoadBytes([]byte("channels: {telegram: {accounts: {default: {<<: {requireMentoin: true}, token: '1:a'}}}}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "requireMentoin: unknown key") {
		t.Fatalf("a misspelled merged key: %v", err)
	}
}
