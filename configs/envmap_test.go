package configs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvSetsMapEntries: a GATEWAY_* variable naming an entry of a map of
// values (an MCP server's env var, a header, an agent's time zone, an
// identity link) sets it; such variables were silently ignored (the map
// key, the name's last tokens, was never matched). Names of environment
// variables keep their case; ids are lower-cased as ever. ENV_FILES_X is
// envFiles.X (a field's name is read whole before a map key), not the
// variable FILES_X of env.
func TestEnvSetsMapEntries(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := []byte(`
providers:
  oa: {type: openai, baseURL: "https://api.example.com/v1", apiKey: k}
mcp:
  servers:
    fs: {command: mcp-fs, env: {LOG: "1"}}
    gh: {url: "https://mcp.example.com/mcp"}
`)
	c, err := LoadBytes(yaml, []string{
		"GATEWAY_MCP_SERVERS_FS_ENV_GITHUB_TOKEN=ghp_abc",
		"GATEWAY_MCP_SERVERS_FS_ENV_lower_name=x",
		"GATEWAY_MCP_SERVERS_FS_ENV_FILES_API_KEY=" + secret,
		"GATEWAY_MCP_SERVERS_GH_HEADERS_AUTHORIZATION=Bearer t",
		"GATEWAY_MCP_SERVERS_GH_HEADER_FILES_X-API-KEY=" + secret,
		"GATEWAY_PROVIDERS_OA_HEADERS_X-TITLE=gateway",
		"GATEWAY_JOBS_TIMEZONE_BY_AGENT_MAIN=Europe/Berlin",
		"GATEWAY_SESSION_IDENTITY_LINKS_ALICE=telegram:1,discord:2",
	})
	if err != nil {
		t.Fatal(err)
	}
	fs, gh := c.MCP.Servers["fs"], c.MCP.Servers["gh"]
	if fs.Env["GITHUB_TOKEN"] != "ghp_abc" || fs.Env["LOG"] != "1" || fs.Env["lower_name"] != "x" || len(fs.Env) != 3 {
		t.Errorf("mcp.servers.fs.env = %v, want LOG, GITHUB_TOKEN and lower_name", fs.Env)
	}
	if fs.EnvFiles["API_KEY"] != secret || len(fs.EnvFiles) != 1 {
		t.Errorf("mcp.servers.fs.envFiles = %v", fs.EnvFiles)
	}
	if gh.Headers["AUTHORIZATION"] != "Bearer t" || gh.HeaderFiles["X-API-KEY"] != secret {
		t.Errorf("mcp.servers.gh headers = %v, headerFiles = %v", gh.Headers, gh.HeaderFiles)
	}
	if got := c.Providers["oa"].Headers["X-TITLE"]; got != "gateway" {
		t.Errorf("providers.oa.headers = %v", c.Providers["oa"].Headers)
	}
	if got := c.Jobs.TimeZoneByAgent["main"]; got != "Europe/Berlin" {
		t.Errorf("jobs.timezoneByAgent = %v", c.Jobs.TimeZoneByAgent)
	}
	if got := c.Session.IdentityLinks["alice"]; !slices.Equal(got, []string{"telegram:1", "discord:2"}) {
		t.Errorf("session.identityLinks = %v", c.Session.IdentityLinks)
	}
}

// TestEnvSetsEnvVarBesideOneDifferingInCase: an environment variable name
// is case-sensitive: GITHUB_TOKEN from the environment is a second entry
// beside the file's github_token, not a replacement of it.
func TestEnvSetsEnvVarBesideOneDifferingInCase(t *testing.T) {
	c, err := LoadBytes([]byte("mcp: {servers: {fs: {command: x, env: {github_token: a}}}}\n"),
		[]string{"GATEWAY_MCP_SERVERS_FS_ENV_GITHUB_TOKEN=b"})
	if err != nil {
		t.Fatal(err)
	}
	if env := c.MCP.Servers["fs"].Env; env["github_token"] != "a" || env["GITHUB_TOKEN"] != "b" {
		t.Fatalf("env = %v, want github_token a and GITHUB_TOKEN b", env)
	}
}

// TestEnvTextTakenVerbatim: a text key set from the environment takes the
// variable's value as it is. It was read as YAML: a token 007 became "7",
// 0x1F "31", 1e3 "1000", a long number lost its digits, and true was
// refused.
func TestEnvTextTakenVerbatim(t *testing.T) {
	for _, v := range []string{"007", "0x1F", "1e3", "123456789012345678901234567890", "true", "null", "~", "-5"} {
		c, err := LoadBytes(nil, []string{"GATEWAY_HTTP_TOKEN=" + v, "GATEWAY_PROVIDERS_OA_TYPE=openai",
			"GATEWAY_PROVIDERS_OA_BASE_URL=https://api.example.com/v1", "GATEWAY_PROVIDERS_OA_API_KEY=" + v})
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if c.HTTP.Token != v || c.Providers["oa"].APIKey != v {
			t.Errorf("GATEWAY_HTTP_TOKEN=%q: http.token %q, providers.oa.apiKey %q", v, c.HTTP.Token, c.Providers["oa"].APIKey)
		}
	}
}

// TestEnvListOfNumbers: a list of numbers is a comma list in the
// environment, as a list of text is; it was refused ("expected a list").
// An item that is no number is refused naming the variable.
func TestEnvListOfNumbers(t *testing.T) {
	yaml := []byte("channels: {discord: {accounts: {default: {token: x}}}}\n")
	c, err := LoadBytes(yaml, []string{"GATEWAY_CHANNELS_DISCORD_ACCOUNTS_DEFAULT_UPLOAD_LIMITS_MB=8, 50,100 ,100"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Channels.Discord.Accounts["default"].UploadLimitsMb; !slices.Equal(got, []int{8, 50, 100, 100}) {
		t.Fatalf("uploadLimitsMb = %v, want [8 50 100 100]", got)
	}
	_, err = LoadBytes(yaml, []string{"GATEWAY_CHANNELS_DISCORD_ACCOUNTS_DEFAULT_UPLOAD_LIMITS_MB=8,lots,100,100"})
	if err == nil || !strings.Contains(err.Error(), "env GATEWAY_CHANNELS_DISCORD_ACCOUNTS_DEFAULT_UPLOAD_LIMITS_MB") ||
		!strings.Contains(err.Error(), `"lots"`) {
		t.Fatalf("err = %v, want one naming the variable and the item", err)
	}
}

// TestEnvNamingNoKeyIsANotice: a GATEWAY_* variable that names no key
// (a typo, a list entry such as an agent of agents.list) was ignored in
// silence; it is a notice naming it, with the nearest key's variable when
// one is close. The gateway's own variables that are not config keys are
// not.
func TestEnvNamingNoKeyIsANotice(t *testing.T) {
	c, err := LoadBytes(nil, []string{"GATEWAY_AGENTS_MY_BOT_MODEL=oa/x", "GATEWAY_HTTP_LISTN=127.0.0.1:1",
		"GATEWAY_CONFIG=/etc/gateway/gateway.yaml", "GATEWAY_PPROF_LISTEN=127.0.0.1:6060",
		"GATEWAY_SESSION_CACHE_TTL_MS=0", "GATEWAYX=1", "GATEWAY_log_level=debug"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Notices()
	if len(got) != 3 {
		t.Fatalf("notices %q, want 3", got)
	}
	if !strings.Contains(got[0], "GATEWAY_AGENTS_MY_BOT_MODEL") || !strings.Contains(got[0], "names no config key") {
		t.Errorf("notice %q", got[0])
	}
	if !strings.Contains(got[1], "GATEWAY_HTTP_LISTN") || !strings.Contains(got[1], "did you mean GATEWAY_HTTP_LISTEN?") {
		t.Errorf("notice %q", got[1])
	}
	if !strings.Contains(got[2], "GATEWAY_log_level") || !strings.Contains(got[2], "did you mean GATEWAY_LOG_LEVEL?") {
		t.Errorf("notice %q", got[2])
	}
}

// TestEnvAmbiguousName: a map key may hold '_', so a name can fit several
// keys. The one whose entries the file declares is taken; when the file
// declares none of them, or several, the variable is refused naming the
// keys it fits. It used to be guessed in silence (the fit whose map keys
// took the fewest tokens).
func TestEnvAmbiguousName(t *testing.T) {
	const name = "GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_SECRET_TOKEN"
	account := func(id string) string { return "      " + id + ": {token: \"1:x\"}\n" }
	file := func(ids ...string) []byte {
		s := "channels:\n  telegram:\n    accounts:\n"
		for _, id := range ids {
			s += account(id)
		}
		return []byte(s)
	}
	env := []string{name + "=s3cret"}

	c, err := LoadBytes(file("default_webhook_secret", "other"), []string{name + "=9:y"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Channels.Telegram.Accounts["default_webhook_secret"].Token; got != "9:y" || len(c.Channels.Telegram.Accounts) != 2 {
		t.Fatalf("accounts %+v: want default_webhook_secret's token 9:y", c.Channels.Telegram.Accounts)
	}

	for _, tc := range []struct {
		name string
		yaml []byte
	}{{"no entry declared", nil}, {"both declared", file("default", "default_webhook_secret")}} {
		_, err := LoadBytes(tc.yaml, env)
		if err == nil {
			t.Fatalf("%s: loaded", tc.name)
		}
		for _, w := range []string{"env " + name, "channels.telegram.accounts.default.webhook.secretToken",
			"channels.telegram.accounts.default_webhook_secret.token"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err %q lacks %q", tc.name, err, w)
			}
		}
	}

	// An entry another variable declares counts as declared.
	c, err = LoadBytes(nil, append(env, "GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN=1:x",
		"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_MODE=webhook",
		"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_URL=https://bot.example.com/tg"))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Channels.Telegram.Accounts; len(a) != 1 || a["default"].Webhook.SecretToken != "s3cret" {
		t.Fatalf("accounts %+v", a)
	}
}

// TestEnvTwoVariablesForOneKey: two variables setting one key to different
// values (the shortcut GATEWAY_CHANNELS_TELEGRAM_TOKEN and the full name)
// are refused naming both: which one applied depended on the order of the
// environment. The same value twice is fine.
func TestEnvTwoVariablesForOneKey(t *testing.T) {
	_, err := LoadBytes(nil, []string{"GATEWAY_CHANNELS_TELEGRAM_TOKEN=1:a", "GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN=2:b"})
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_CHANNELS_TELEGRAM_TOKEN") ||
		!strings.Contains(err.Error(), "GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN") {
		t.Fatalf("err = %v, want one naming both variables", err)
	}
	c, err := LoadBytes(nil, []string{"GATEWAY_CHANNELS_TELEGRAM_TOKEN=1:a", "GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN=1:a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Channels.Telegram.Accounts["default"].Token; got != "1:a" {
		t.Fatalf("token %q", got)
	}
}

// TestEnvModelNameWithDot: a map key may hold '.' (a model gpt-4.1): a
// wrong value for its key is refused naming the variable, and a right one
// lands on the model.
func TestEnvModelNameWithDot(t *testing.T) {
	yaml := []byte("providers:\n  oa: {type: openai, baseURL: \"https://api.example.com/v1\", apiKey: k, models: {gpt-4.1: {contextWindow: 300000}}}\n")
	const name = "GATEWAY_PROVIDERS_OA_MODELS_GPT-4.1_CONTEXT_WINDOW"
	_, err := LoadBytes(yaml, []string{name + "=lots"})
	if err == nil || !strings.Contains(err.Error(), "env "+name) || !strings.Contains(err.Error(), "expected a whole number") {
		t.Fatalf("err = %v", err)
	}
	c, err := LoadBytes(yaml, []string{name + "=400000"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Providers["oa"].Models["gpt-4.1"].ContextWindow; got != 400000 {
		t.Fatalf("contextWindow = %d", got)
	}
}

// TestEnvProviderBaseURL: GATEWAY_PROVIDERS_<NAME>_BASE_URL sets the
// provider's baseURL; a run of capitals in a key is one word (it wanted
// BASE_U_R_L, and BASE_URL was ignored in silence).
func TestEnvProviderBaseURL(t *testing.T) {
	c, err := LoadBytes([]byte("providers: {oa: {type: openai, baseURL: \"https://api.example.com/v1\", apiKey: k}}\n"),
		[]string{"GATEWAY_PROVIDERS_OA_BASE_URL=https://proxy.example.com/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Providers["oa"].BaseURL; got != "https://proxy.example.com/v1" {
		t.Fatalf("baseURL = %q", got)
	}
	if n := c.Notices(); len(n) != 1 || !strings.Contains(n[0], "providers.oa.baseURL: set in the file and by GATEWAY_PROVIDERS_OA_BASE_URL") {
		t.Fatalf("notices %q", n)
	}
}

// TestEnvListOfEntriesRefused: agents.list and bindings are lists of
// entries, which a variable cannot write: one that tries is refused
// naming it (a comma list of text is no list of agents).
func TestEnvListOfEntriesRefused(t *testing.T) {
	_, err := LoadBytes(nil, []string{"GATEWAY_BINDINGS=main"})
	if err == nil || err.Error() != "config: env GATEWAY_BINDINGS: bindings: a list of entries is set in the file only, not from the environment" {
		t.Fatalf("err = %v", err)
	}
}

// TestEnvOverridesOnReload: a reload (LoadSaved, what SIGHUP and the file
// watch read) applies the environment as the start (Load) does, refusals
// and notices included.
func TestEnvOverridesOnReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte("mcp: {servers: {fs: {command: x}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEWAY_MCP_SERVERS_FS_ENV_GITHUB_TOKEN", "ghp_abc")
	t.Setenv("GATEWAY_MCP_SERVERS_FS_TYPO", "1")
	start, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reload, err := LoadSaved(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Config{start, reload} {
		if c.MCP.Servers["fs"].Env["GITHUB_TOKEN"] != "ghp_abc" || !slices.ContainsFunc(c.Notices(), func(n string) bool {
			return strings.Contains(n, "GATEWAY_MCP_SERVERS_FS_TYPO")
		}) {
			t.Fatalf("env %v, notices %q", c.MCP.Servers["fs"].Env, c.Notices())
		}
	}
	t.Setenv("GATEWAY_HTTP_MAX_CONNECTIONS", "lots")
	_, errStart := Load(path)
	_, errReload := LoadSaved(path)
	if errStart == nil || errReload == nil || errStart.Error() != errReload.Error() {
		t.Fatalf("start: %v; reload: %v", errStart, errReload)
	}
}
