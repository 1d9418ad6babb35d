package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// A tool result larger than Options.MaxMessageBytes is refused as it arrives,
// over stdio and over Streamable HTTP answering with one JSON body (which
// the SDK reads whole with no cap), and over HTTP event streams: the call
// fails with an error naming the server and the limit, and the server is
// usable again afterwards (reconnected like after any other failure).
func TestOversizedToolResultIsRefused(t *testing.T) {
	const limit = 256 << 10
	cases := map[string]func(t *testing.T) mcp.ServerConfig{
		"stdio": func(t *testing.T) mcp.ServerConfig { return mcptest.StdioConfig(t) },
		"json":  func(t *testing.T) mcp.ServerConfig { return mcp.ServerConfig{URL: mcptest.NewJSONHTTPServer(t).URL} },
		"sse":   func(t *testing.T) mcp.ServerConfig { return mcp.ServerConfig{URL: mcptest.NewHTTPServer(t).URL} },
	}
	for name, cfgOf := range cases {
		t.Run(name, func(t *testing.T) {
			m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxMessageBytes: limit})
			cfg := cfgOf(t)
			cfg.Timeout = 20 * time.Second
			cfg.ConnectTimeout = 20 * time.Second
			m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"huge": cfg}})
			run(t, m)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if len(m.Tools(ctx, nil)) == 0 {
				t.Fatalf("no tools: %+v", status(m, "huge"))
			}
			res, err := m.Call(ctx, "huge__big", []byte(fmt.Sprintf(`{"bytes":%d}`, limit+1024)))
			if err == nil {
				t.Fatalf("a %d-byte result was accepted (%d bytes of text)", limit+1024, len(text(res)))
			}
			if msg := err.Error(); !strings.Contains(msg, "MCP server huge") || !strings.Contains(msg, fmt.Sprint(limit)) {
				t.Fatalf("error %q does not name the server and the limit", msg)
			}
			if got := text(call(t, m, "huge__echo", `{"text":"after"}`)); got != "after" {
				t.Fatalf("echo after the refusal = %q", got)
			}
		})
	}
}
