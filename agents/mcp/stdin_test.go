package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
)

// A call to a stdio server that has stopped reading its input (hung, or
// busy in a long call: the pipe's buffer fills) ends at its timeout: the
// request is written from a queue, not by the caller; and the manager
// stops (the daemon's shutdown). The SDK writes a request without a
// context, so the call — and the turn, whose end did not stop it either —
// waited for as long as the server did not read, and closing the session
// waited for that write: the shutdown hung for ever.
func TestStdioCallTimesOutWhileServerNotReading(t *testing.T) {
	cfg := rawStdioConfig(t, rawServer{Tools: `[{"name":"slow","inputSchema":{"type":"object"}},{"name":"fast","inputSchema":{"type":"object"}}]`,
		Result: `{"content":[{"type":"text","text":"ok"}]}`}, "")
	cfg.Env[envRawSlow] = "1h" // reads nothing more once slow is called
	cfg.Timeout = 500 * time.Millisecond
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"s": cfg}})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	defer stop()
	// Up and reading first: under load the server's start can take longer
	// than the call's 500 ms, and slow, failing with "did not start",
	// never reached it (the server then read fast's request and answered).
	waitFor(t, "the server ready", func() bool { return status(m, "s").State == mcp.StateReady })
	if _, err := m.Call(context.Background(), "s__slow", nil); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow: %v, want its timeout", err)
	}
	// More than the pipe holds (64 KiB), as a model passing a document.
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "s__fast", []byte(`{"doc":"`+strings.Repeat("x", 300<<10)+`"}`))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "timed out after 500ms") {
			t.Fatalf("call to a server not reading: %v, want its timeout", err)
		}
	case <-time.After(20 * time.Second): // a watchdog, far past the 500 ms timeout
		t.Fatal("the call outlived its timeout: it waits for the server to read")
	}
	stop()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second): // a watchdog: stdin closed, 5 s, SIGTERM ends it
		t.Fatal("the manager does not stop: closing the session waits for the write")
	}
}
