package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// A stdio server that prints lines that are not JSON to stdout (a start
// banner, a stray debug print during a call) stays usable: those lines
// are skipped, as the other SDKs' clients skip them, rather than breaking
// the connection (which made such a server fail every start, or crash
// every call that printed).
func TestStdioServerNoiseOnStdout(t *testing.T) {
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	cfg := mcptest.StdioConfig(t)
	cfg.Env[mcptest.EnvBanner] = "1"
	cfg.Timeout = 20 * time.Second
	cfg.ConnectTimeout = 20 * time.Second
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"noisy": cfg}})
	run(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got := len(m.Tools(ctx, nil)); got == 0 {
		t.Fatalf("no tools: the server with a banner did not connect: %+v", status(m, "noisy"))
	}
	if got := text(call(t, m, "noisy__echo", `{"text":"hi"}`)); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	pid := text(call(t, m, "noisy__pid", `{}`))
	res, err := m.Call(context.Background(), "noisy__noise", []byte(`{}`))
	if err != nil || text(res) != "quiet" {
		t.Fatalf("noise = %+v, %v", res, err)
	}
	if got := text(call(t, m, "noisy__pid", `{}`)); got != pid {
		t.Fatalf("pid %s after the noise, was %s: the server was restarted", got, pid)
	}
	if st := status(m, "noisy"); st.Restarts != 0 || !strings.EqualFold(string(st.State), "ready") {
		t.Fatalf("status = %+v", st)
	}
}

// A stdio server that logs to stdout in brackets ("[INFO] started") or as
// JSON records (a pino logger's default) stays usable: those lines start
// like JSON, and the SDK's reader ended the connection on them, so such a
// server failed every start and was restarted forever with no tool
// offered.
func TestStdioServerJSONLookingNoiseOnStdout(t *testing.T) {
	for name, noise := range map[string]string{
		"brackets": "[INFO] raw server started",
		"record":   `{"level":30,"time":1764600000000,"msg":"raw server started"}`,
	} {
		t.Run(name, func(t *testing.T) {
			m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
			cfg := rawStdioConfig(t, rawServer{Tools: `[{"name":"hello","inputSchema":{"type":"object"}}]`,
				Result: `{"content":[{"type":"text","text":"hi"}]}`}, noise)
			cfg.Timeout = 20 * time.Second
			cfg.ConnectTimeout = 20 * time.Second
			m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"noisy": cfg}})
			run(t, m)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if got := toolNames(m.Tools(ctx, nil)); len(got) != 1 {
				t.Fatalf("tools = %v: the server did not connect: %+v", got, status(m, "noisy"))
			}
			if got := text(call(t, m, "noisy__hello", `{}`)); got != "hi" {
				t.Fatalf("hello = %q", got)
			}
			if st := status(m, "noisy"); st.Restarts != 0 || st.State != mcp.StateReady {
				t.Fatalf("status = %+v", st)
			}
		})
	}
}
