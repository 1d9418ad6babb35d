package webtest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
)

// Config tunes Start.
type Config struct {
	// Token, when set, is required as the bearer token.
	Token string
	// Agents are the agent ids (default ["main"]); the first is the default.
	Agents []string
	// Logger receives every component's logs (nil: discarded).
	Logger *zap.Logger
	// AllowedOrigins are the config's http.allowedOrigins.
	AllowedOrigins []string
	// StateDir, when set, is the state directory (a restart test starts a
	// second daemon on the first one's); else a new temporary one.
	StateDir string
	// OpenAIBaseURL, when set, makes the agents' model "fake/gpt-test" of
	// an OpenAI-compatible provider there (agents/openai/openaitest) instead
	// of the echo provider: a test scripts tool calls and Markdown.
	OpenAIBaseURL string
	// TelegramAPIRoot and TelegramToken, when set, add the Telegram account
	// "default" polling a fake Bot API there (channels/telegram/telegramtest),
	// open to DMs.
	TelegramAPIRoot, TelegramToken string
	// TelegramDMPolicy is the account's dmPolicy (default open).
	TelegramDMPolicy string
	// AgentTools is every agent's tools.allow (default none).
	AgentTools []string
	// Workspace, when set, is every agent's workspace directory.
	Workspace string
	// ChoicesNow, when set, is the choice buttons' clock
	// (gatewayd.Options.ChoicesNow): a test expires a question's buttons
	// without waiting.
	ChoicesNow func() time.Time
}

// Env is a running in-process gateway.
type Env struct {
	URL      string // base URL, e.g. http://127.0.0.1:40123
	StateDir string
	Server   *api.Server // the daemon's HTTP API handler
	Daemon   *gatewayd.Daemon
	// Stop stops the daemon and waits for it (Cleanup calls it too; a
	// second call does nothing).
	Stop func()
}

// Start runs a daemon built by gatewayd on 127.0.0.1:0 with the offline echo
// provider and the web chat, and returns once it is ready; t.Cleanup stops
// it and fails the test if it did not shut down cleanly.
func Start(t testing.TB, c Config) *Env {
	t.Helper()
	if len(c.Agents) == 0 {
		c.Agents = []string{"main"}
	}
	log := c.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir := c.StateDir
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "state")
	}
	cfg, err := configs.LoadBytes(configYAML(dir, c), nil)
	if err != nil {
		t.Fatalf("webtest: config: %v", err)
	}
	ready := make(chan string, 1)
	d, err := gatewayd.New(cfg, gatewayd.Options{Logger: log, OnReady: func(addr string) { ready <- addr }, ChoicesNow: c.ChoicesNow})
	if err != nil {
		t.Fatalf("webtest: new daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("webtest: daemon exited before ready: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatal("webtest: daemon not ready after 30s")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("webtest: daemon: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("webtest: daemon did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return &Env{URL: "http://" + addr, StateDir: dir, Server: d.API(), Daemon: d, Stop: stop}
}

// configYAML is the daemon's config as an operator would write it (JSON is
// YAML): the echo provider, the given agents, the web chat, no debounce so
// that each message is its own turn at once.
func configYAML(stateDir string, c Config) []byte {
	list := make([]map[string]any, 0, len(c.Agents))
	for _, a := range c.Agents {
		agent := map[string]any{"id": a}
		if len(c.AgentTools) > 0 {
			agent["tools"] = map[string]any{"allow": c.AgentTools}
		}
		if c.Workspace != "" {
			agent["workspace"] = c.Workspace
		}
		list = append(list, agent)
	}
	httpCfg := map[string]any{"listen": "127.0.0.1:0", "web": true}
	if c.Token != "" {
		httpCfg["token"] = c.Token
	}
	if len(c.AllowedOrigins) > 0 {
		httpCfg["allowedOrigins"] = c.AllowedOrigins
	}
	providers := map[string]any{"local": map[string]string{"type": "echo"}}
	model := "local/echo"
	if c.OpenAIBaseURL != "" {
		providers["fake"] = map[string]string{"type": "openai", "baseURL": c.OpenAIBaseURL, "apiKey": "sk-fake"}
		model = "fake/gpt-test"
	}
	channels := map[string]any{}
	if c.TelegramAPIRoot != "" {
		if c.TelegramDMPolicy == "" {
			c.TelegramDMPolicy = "open"
		}
		channels["telegram"] = map[string]any{"accounts": map[string]any{"default": map[string]any{
			"token": c.TelegramToken, "apiRoot": c.TelegramAPIRoot, "dmPolicy": c.TelegramDMPolicy, "pollTimeoutSeconds": 1}}}
	}
	b, _ := json.Marshal(map[string]any{
		"channels":  channels,
		"stateDir":  stateDir,
		"http":      httpCfg,
		"providers": providers,
		"agents": map[string]any{
			"defaults": map[string]any{"model": model, "timeoutSeconds": 60},
			"list":     list,
		},
		"messages": map[string]any{"queue": map[string]string{"debounce": "0s"}},
	})
	return b
}
