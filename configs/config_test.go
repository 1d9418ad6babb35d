package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
)

func TestEveryConfigFileLoads(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want at least the example and quick-start configs, found %v", files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := LoadBytes(data, nil); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := LoadBytes(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Listen != "127.0.0.1:8787" || c.Agents.Defaults.Model.Primary != "local/echo" ||
		c.Agents.Defaults.MaxConcurrent != 4 || c.Session.Reset.Mode != "off" ||
		c.Messages.Queue.Debounce != time.Second || c.Session.Maintenance.PruneAfter != 720*time.Hour {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if got := c.Session.ResetTriggers; len(got) != 2 || got[0] != "/new" {
		t.Fatalf("reset triggers = %v", got)
	}
}

func TestEnvOverrides(t *testing.T) {
	env := []string{
		"GATEWAY_STATE_DIR=/tmp/gw-state",
		"GATEWAY_HTTP_LISTEN=127.0.0.1:9999",
		"GATEWAY_AGENTS_DEFAULTS_MAX_CONCURRENT=7",
		"GATEWAY_MESSAGES_QUEUE_DEBOUNCE=250ms",
		"GATEWAY_SESSION_RESET_TRIGGERS=/new,/fresh",
		"UNRELATED=1",
	}
	c, err := LoadBytes(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.StateDir != "/tmp/gw-state" || c.HTTP.Listen != "127.0.0.1:9999" || c.Agents.Defaults.MaxConcurrent != 7 ||
		c.Messages.Queue.Debounce != 250*time.Millisecond {
		t.Fatalf("env not applied: %+v", c)
	}
	if got := strings.Join(c.Session.ResetTriggers, " "); got != "/new /fresh" {
		t.Fatalf("triggers = %q", got)
	}
}

func TestEnvAccountToken(t *testing.T) {
	c, err := LoadBytes(nil, []string{"GATEWAY_CHANNELS_TELEGRAM_TOKEN=123:abc"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Channels.Telegram.Accounts["default"].Token != "123:abc" {
		t.Fatalf("token not applied: %+v", c.Channels.Telegram.Accounts)
	}
	c, err = LoadBytes(nil, []string{"GATEWAY_CHANNELS_TELEGRAM_ACCOUNTS_SECOND_BOT_TOKEN=9:x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Channels.Telegram.Accounts["second_bot"].Token != "9:x" {
		t.Fatalf("account token not applied: %+v", c.Channels.Telegram.Accounts)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "bogus: 1\n", "bogus"},
		{"unknown nested key", "http: {listen: '127.0.0.1:1', colour: red}\n", "colour"},
		{"bad duration", "messages: {queue: {debounce: soon}}\n", "debounce"},
		{"bad queue mode", "messages: {queue: {mode: shout}}\n", "messages.queue.mode"},
		{"bad dmScope", "session: {dmScope: all}\n", "session.dmScope"},
		{"bad model", "agents: {defaults: {model: nowhere/x}}\n", "agents.defaults.model"},
		{"public without token", "http: {listen: '0.0.0.0:8787'}\n", "http.token"},
		{"binding to unknown agent", "bindings: [{agentId: ghost, match: {channel: telegram}}]\n", "bindings[0].agentId"},
		{"bad yaml", "http: [\n", "YAML syntax"},
		{"bad log format", "log: {format: xml}\n", "log.format"},
		{"blank token", "http: {token: '   '}\n", "http.token"},
		{"bad allowed origin", "http: {allowedOrigins: [evil.example]}\n", "http.allowedOrigins[0]"},
		{"zero connections", "http: {maxConnections: 0}\n", "http.maxConnections"},
		{"zero delivery failures", "messages: {delivery: {maxFailures: 0}}\n", "messages.delivery.maxFailures"},
		{"huge delivery crashes", "messages: {delivery: {maxCrashes: 1000}}\n", "messages.delivery.maxCrashes"},
		{"media text cap zero", "media: {maxTextKb: 0}\n", "media.maxTextKb"},
		{"transcription provider unknown", "media: {audio: {provider: ghost}}\n", "media.audio.provider"},
		{"transcription provider not openai", "media: {audio: {provider: local}}\n", "media.audio.provider"},
		{"transcription model alone", "media: {audio: {model: whisper-1}}\n", "media.audio.model"},
		{"bad vision pattern", "providers: {local: {type: echo}, oa: {type: openai, visionModels: ['gpt-[4']}}\n", "providers.oa.visionModels"},
		{"telegram media cap", "channels: {telegram: {accounts: {default: {token: 'x:y', mediaMaxMb: 5000}}}}\n", "channels.telegram.accounts.default.mediaMaxMb"},
		{"discord media cap", "channels: {discord: {accounts: {default: {token: t, mediaMaxMb: -1}}}}\n", "channels.discord.accounts.default.mediaMaxMb"},
		{"unknown agent tool", "agents: {list: [{id: main, tools: {allow: [web_search]}}]}\n", "web_search"},
		{"unknown agent tool key", "agents: {list: [{id: main, tools: {enable: [web_fetch]}}]}\n", "enable"},
		{"bad sessions_search scope", "agents: {list: [{id: main, tools: {allow: [sessions_search], sessionsSearch: {scope: everyone}}}]}\n", "tools.sessionsSearch.scope"},
		{"bad streaming mode", "channels: {telegram: {accounts: {default: {token: '1:x', streaming: {mode: loud}}}}}\n", "channels.telegram.accounts.default.streaming.mode"},
		{"ambient model of no provider", "channels: {telegram: {accounts: {default: {token: '1:x', groups: {'-100': {ambient: true, ambientModel: cheap/mini}}}}}}\n",
			`channels.telegram.accounts.default.groups.-100.ambientModel: "cheap/mini" names no provider`},
		{"ambient model on the account", "channels: {discord: {accounts: {default: {token: x, ambientModel: nowhere/x}}}}\n",
			"channels.discord.accounts.default.ambientModel"},
		{"ambient model not provider/model", "channels: {telegram: {accounts: {default: {token: '1:x', ambientModel: mini}}}}\n",
			`ambientModel: "mini" is not provider/model`},
		{"ambient debounce", "channels: {telegram: {accounts: {default: {token: '1:x', groups: {'-100': {ambientDebounce: 1h}}}}}}\n",
			"groups.-100.ambientDebounce: 1h0m0s is not between 1s and 10m0s"},
		{"ambient batch", "channels: {telegram: {accounts: {default: {token: '1:x', ambientMaxBatch: 0}}}}\n", "ambientMaxBatch: 0 is outside 1..200"},
		{"ambient per hour", "channels: {telegram: {accounts: {default: {token: '1:x', ambientPerHour: -1}}}}\n", "ambientPerHour: -1 is outside 1..3600"},
	}
	for _, tt := range tests {
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

func TestMediaConfig(t *testing.T) {
	c, err := LoadBytes([]byte("providers: {local: {type: echo}, oa: {type: openai, visionModels: ['gpt-4o*']}}\n"+
		"media: {audio: {provider: oa, model: whisper-1}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Media.Audio.Provider != "oa" || c.Media.MaxTextKB != 32 || !c.Providers["oa"].TakesImages("gpt-4o-mini") {
		t.Fatalf("media %+v, providers %+v", c.Media, c.Providers)
	}
}

func TestListsReplaceDefaults(t *testing.T) {
	c, err := LoadBytes([]byte("agents: {list: [{id: ops}, {id: main}]}\nsession: {resetTriggers: ['/fresh']}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents.List) != 2 || c.Agents.List[0].ID != "ops" {
		t.Fatalf("agents.list = %+v", c.Agents.List)
	}
	if len(c.Session.ResetTriggers) != 1 {
		t.Fatalf("triggers = %v", c.Session.ResetTriggers)
	}
}

func TestTokenFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadBytes([]byte("http: {listen: '0.0.0.0:1', tokenFile: '"+f+"'}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Token != "s3cret" {
		t.Fatalf("token = %q", c.HTTP.Token)
	}
}

// TestAmbientRoomKeys: the ambient keys of a group entry and of an
// account reach the room the dispatcher reads, over the defaults (off).
func TestAmbientRoomKeys(t *testing.T) {
	c, err := LoadBytes([]byte("providers: {local: {type: echo}, cheap: {type: echo}}\n"+
		"channels: {telegram: {accounts: {default: {token: '1:x', ambientPerHour: 4, groups: {'-100': {ambient: true, ambientModel: cheap/mini, ambientDebounce: 5s, ambientMaxBatch: 7}}}}}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	acc := c.Channels.Telegram.Accounts["default"].Access()
	room := acc.Groups["-100"].RoomConfig.Apply(acc.Room.Apply(channels.DefaultRoom("telegram")))
	want := channels.AmbientConfig{On: true, Model: "cheap/mini", Debounce: 5 * time.Second, MaxBatch: 7, PerHour: 4}
	if room.Ambient != want {
		t.Errorf("group room ambient = %+v, want %+v", room.Ambient, want)
	}
	if def := acc.Room.Apply(channels.DefaultRoom("telegram")).Ambient; def.On || def.PerHour != 4 || def.MaxBatch != channels.DefaultAmbientMaxBatch {
		t.Errorf("account room ambient = %+v, want off with perHour 4 and the default batch", def)
	}
}

// TestLoadSavedRefusesNoDocument: LoadSaved (hot reload) refuses a file
// with no settings, empty or only comments, naming the file, where Load
// (the start) reads it as the defaults; a file with settings loads alike.
func TestLoadSavedRefusesNoDocument(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{"", "\n  \n", "# header only\n# more\n"} {
		path := filepath.Join(dir, fmt.Sprintf("empty%d.yaml", i))
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Fatalf("Load(%q): %v", content, err)
		}
		_, err := LoadSaved(path)
		var ce *Error
		if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), "empty") || !errors.Is(err, ErrEmpty) {
			t.Fatalf("LoadSaved(%q) = %v, want an *Error naming %s and saying it is empty", content, err, path)
		}
	}
	path := filepath.Join(dir, "set.yaml")
	if err := os.WriteFile(path, []byte("# header\nstateDir: /tmp/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadSaved(path); err != nil || c.StateDir != "/tmp/x" {
		t.Fatalf("LoadSaved of a file with settings = %v, %v", c, err)
	}
}
