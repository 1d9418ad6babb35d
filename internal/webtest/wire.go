package webtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/echo"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Config tunes Start.
type Config struct {
	// Token, when set, is required as the bearer token.
	Token string
	// Agents are the agent ids (default ["main"]); the first is the default.
	Agents []string
	// Logger receives every component's logs (nil: discarded).
	Logger *zap.Logger
	// AllowedOrigins are passed to api.Options.
	AllowedOrigins []string
}

// Env is a running in-process gateway HTTP surface.
type Env struct {
	URL        string // base URL, e.g. http://127.0.0.1:40123
	StateDir   string
	Sessions   *sessions.Manager
	Runner     *agents.Runner
	Dispatcher *dispatch.Dispatcher
	Server     *api.Server
}

// probeText is refused by the test access policy: Start sends it until the
// web adapter's handler is in place (a 403 instead of a 503).
const probeText = "\x01webtest-probe"

// Start wires and starts everything on 127.0.0.1:0; t.Cleanup stops it.
func Start(t testing.TB, c Config) *Env {
	t.Helper()
	if len(c.Agents) == 0 {
		c.Agents = []string{"main"}
	}
	log := c.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir := t.TempDir()
	mgr, err := sessions.Open(sessions.Options{StateDir: dir, Logger: log.Named("sessions")})
	if err != nil {
		t.Fatalf("webtest: open sessions: %v", err)
	}
	provider, err := echo.New(echo.Config{Name: "local", Provider: llm.ProviderConfig{Type: llm.TypeEcho}})
	if err != nil {
		t.Fatalf("webtest: echo provider: %v", err)
	}
	list := make([]agents.Agent, 0, len(c.Agents))
	for _, a := range c.Agents {
		list = append(list, agents.Agent{ID: a})
	}
	var disp *dispatch.Dispatcher
	runner, err := agents.NewRunner(agents.Options{
		Sessions:  mgr,
		Providers: map[string]llm.Provider{"local": provider},
		Defaults: agents.Defaults{Model: "local/echo", ContextWindow: 200000, MaxConcurrent: 4, TimeoutSeconds: 60,
			Compaction: agents.Compaction{ReserveTokens: 20000, KeepRecentTokens: 20000},
			Subagents:  agents.Subagents{MaxConcurrent: 8}},
		Agents: list,
		Logger: log.Named("agents"),
		Dispatch: func(ctx context.Context, d agents.Dispatch) error {
			return disp.Dispatch(ctx, d)
		},
	})
	if err != nil {
		t.Fatalf("webtest: runner: %v", err)
	}
	resolver, err := routing.NewResolver(routing.Config{DefaultAgent: c.Agents[0],
		DMScope: routing.ScopePerChannelPeer, MainKey: "main"})
	if err != nil {
		t.Fatalf("webtest: resolver: %v", err)
	}
	queue := dispatch.DefaultQueue()
	queue.Debounce = 0
	reg := prometheus.NewRegistry()
	disp, err = dispatch.New(dispatch.Options{Sessions: mgr, Runner: runner, Logger: log.Named("dispatch"),
		Providers: []string{"local"}, Metrics: dispatch.NewMetrics(reg)}, &dispatch.Runtime{
		Resolver: resolver,
		Access: func(in channels.Inbound) dispatch.Verdict {
			if in.Text == probeText {
				return dispatch.Verdict{Reason: "probe"}
			}
			return dispatch.Verdict{Allow: true, Privileged: true}
		},
		Queue: queue,
		Reset: sessions.ResetConfig{ResetTriggers: sessions.DefaultResetTriggers},
	})
	if err != nil {
		t.Fatalf("webtest: dispatcher: %v", err)
	}
	wa := web.New(web.Options{Logger: log.Named("web"), Lookup: func(agentID, sessionID string) (string, bool) {
		return lookupWebPeer(mgr, agentID, sessionID)
	}})
	disp.Register(wa)
	srv := api.New(api.Options{Sessions: mgr, Runner: runner, Web: wa, Gatherer: reg, Logger: log.Named("api"),
		Token: c.Token, Agents: c.Agents, Providers: []string{"local"}, Serialise: disp.Serialise,
		AllowedOrigins: c.AllowedOrigins})
	hs := httptest.NewServer(srv)

	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = wa.Run(ctx, disp.Handle)
	}()
	t.Cleanup(func() {
		cancel()
		<-runDone
		hs.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		disp.Shutdown(sctx)
		if err := mgr.Close(); err != nil {
			t.Errorf("webtest: close sessions: %v", err)
		}
	})
	waitAccepting(t, hs.URL, c.Agents[0], c.Token)
	srv.SetReady(true)
	return &Env{URL: hs.URL, StateDir: dir, Sessions: mgr, Runner: runner, Dispatcher: disp, Server: srv}
}

// lookupWebPeer is cmd/gateway's: a web session id maps back to its peer.
func lookupWebPeer(mgr *sessions.Manager, agentID, sessionID string) (string, bool) {
	st, err := mgr.Store(strings.ToLower(agentID))
	if err != nil {
		return "", false
	}
	e, ok, err := st.GetByID(sessionID)
	if err != nil || !ok {
		return "", false
	}
	k, err := routing.Parse(e.SessionKey)
	if err != nil || k.Channel != web.Name || k.Kind != routing.Direct {
		return "", false
	}
	return k.Peer, true
}

// waitAccepting sends the refused probe message until the web adapter's
// Run has installed its handler (403 instead of 503).
func waitAccepting(t testing.TB, base, agent, token string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, err := http.NewRequest(http.MethodPost, base+"/api/agents/"+agent+"/chat",
			strings.NewReader(`{"message":"\u0001webtest-probe"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusForbidden {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("webtest: the web channel did not start accepting messages (last error: %v)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
