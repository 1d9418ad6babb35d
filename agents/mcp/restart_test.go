package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// A call made after a Streamable HTTP server restarted (a deploy, a crash:
// it no longer knows the session and answers 404) goes to a new session:
// the server did not run it, so it is sent again once the manager
// reconnected. It failed with "session not found", so the first tool call
// after every restart of the server was an error for the model.
func TestHTTPServerRestartCallGoesToNewSession(t *testing.T) {
	var handler atomic.Pointer[http.Handler]
	var running *sdk.Server
	start := func() { // a new server process: no sessions; the old one's end
		if running != nil {
			for ss := range running.Sessions() {
				_ = ss.Close()
			}
		}
		running = mcptest.NewServer("restarting")
		s := running
		var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
		handler.Store(&h)
	}
	start()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close) // after the manager stopped (cleanups run last first)
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"web": {URL: srv.URL, Timeout: 30 * time.Second}}})
	run(t, m)
	if got := text(call(t, m, "web__echo", `{"text":"before"}`)); got != "before" {
		t.Fatalf("echo = %q", got)
	}
	start()
	res, err := m.Call(context.Background(), "web__echo", []byte(`{"text":"after"}`))
	if err != nil || text(res) != "after" {
		t.Fatalf("the first call after the server restarted = %q, %v", text(res), err)
	}
	if st := status(m, "web"); st.State != mcp.StateReady || st.Restarts != 1 {
		t.Fatalf("status = %+v, want ready after one reconnection", st)
	}
}

// A stdio server that ignores the cancellation of a call that timed out
// and answers it late keeps its session: the late answer is dropped, and
// the next call — sent while the server was still busy — is answered on
// the same connection, with no restart.
func TestLateAnswerAfterTimeoutKeepsSession(t *testing.T) {
	cfg := rawStdioConfig(t, rawServer{Tools: `[{"name":"slow","inputSchema":{"type":"object"}},{"name":"fast","inputSchema":{"type":"object"}}]`,
		Result: `{"content":[{"type":"text","text":"ok"}]}`}, "")
	cfg.Env[envRawSlow] = "1s"
	cfg.Timeout = 200 * time.Millisecond
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"s": cfg}})
	run(t, m)
	// Up first: a start slower than the call's 200 ms (a loaded machine)
	// fails slow as timed out without sending it.
	waitFor(t, "the server ready", func() bool { return status(m, "s").State == mcp.StateReady })
	if _, err := m.Call(context.Background(), "s__slow", nil); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow call: %v, want a timeout", err)
	}
	cfg.Timeout = 30 * time.Second // applies without reconnecting
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"s": cfg}})
	if got := text(call(t, m, "s__fast", ``)); got != "ok" {
		t.Fatalf("fast = %q", got)
	}
	if st := status(m, "s"); st.State != mcp.StateReady || st.Restarts != 0 {
		t.Fatalf("status = %+v, want the same session", st)
	}
}
