package mcp_test

import (
	"context"
	"testing"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

func benchCall(b *testing.B, cfg mcp.ServerConfig) {
	m := mcp.New(mcp.Options{})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"s": cfg}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if len(m.Tools(ctx, nil)) == 0 {
		b.Fatal("no tools")
	}
	args := []byte(`{"text":"a short line of text for the round trip"}`)
	for b.Loop() {
		if _, err := m.Call(ctx, "s__echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallStdio is one echo tool call to a stdio server (a child
// process), result conversion included.
func BenchmarkCallStdio(b *testing.B) { benchCall(b, mcptest.StdioConfig(b)) }

// BenchmarkCallHTTP is the same over Streamable HTTP on loopback.
func BenchmarkCallHTTP(b *testing.B) {
	benchCall(b, mcp.ServerConfig{URL: mcptest.NewHTTPServer(b).URL})
}

// BenchmarkTools is what a turn pays to list the MCP tools it may offer
// (two connected servers, 9 tools each).
func BenchmarkTools(b *testing.B) {
	m := mcp.New(mcp.Options{})
	srv := mcptest.NewHTTPServer(b)
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"a": {URL: srv.URL}, "b": {URL: srv.URL}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if n := len(m.Tools(ctx, nil)); n != 18 {
		b.Fatalf("%d tools", n)
	}
	for b.Loop() {
		if len(m.Tools(ctx, func(s string) bool { return true })) != 18 {
			b.Fatal("tools missing")
		}
	}
}
