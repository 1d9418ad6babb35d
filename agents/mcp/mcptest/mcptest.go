// Package mcptest holds MCP test servers written with the official Go SDK:
// one tool set served over stdio (by the test binary re-executing itself,
// see ServeStdioIfAsked) or over Streamable HTTP (NewHTTPServer). It is
// test-only code.
//
// Tools: echo {text} returns the text; add {a, b} the sum; image a 1×1 PNG;
// fail a result with isError; sleep {ms} sleeps (for timeouts); crash exits
// the process during the call (stdio); grow adds the tool "extra" (the
// server then sends notifications/tools/list_changed); big {bytes} returns
// that many bytes of text (for the message size cap); "dotted.name" has a
// name outside [A-Za-z0-9_-]. With EnvBanner, the stdio server also has
// noise, which prints a line that is not JSON to stdout before it answers.
package mcptest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gateway/gateway/agents/mcp"
)

// EnvStdio makes a test binary that calls ServeStdioIfAsked serve the
// tools on stdin/stdout instead of running its tests.
const EnvStdio = "GATEWAY_MCPTEST_STDIO"

// EnvBanner=1 makes the stdio server print a line that is not JSON to
// stdout before it serves (as servers that log to stdout do), and offer
// the tool noise.
const EnvBanner = "GATEWAY_MCPTEST_BANNER"

// PNG is the image the image tool returns.
var PNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sleepIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type none struct{}

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// Instructions are the servers' instructions (initialize result), which
// the gateway passes to the model with the server's tools.
const Instructions = "Use add for arithmetic; echo returns its text unchanged."

// NewServer returns a server with the tools of the package doc; name is
// its implementation name (the pid is in "pid" tool's answer).
func NewServer(name string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1.0.0"}, &sdk.ServerOptions{Instructions: Instructions})
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Return the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
			return text(strconv.FormatFloat(in.A+in.B, 'f', -1, 64)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Return a 1x1 PNG."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a dot"}, &sdk.ImageContent{Data: PNG, MIMEType: "image/png"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Report a failure."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			r := text("the disk is on fire")
			r.IsError = true
			return r, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Sleep, then answer."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in sleepIn) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit the server process during the call."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "Return the server's process id."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Add the tool extra."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: "extra", Description: "A tool added later."},
				func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
					return text("extra!"), nil, nil
				})
			return text("grown"), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Return bytes bytes of text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in bigIn) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "dotted.name", Description: "A tool whose name has a dot."},
		func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return text("dotted"), nil, nil
		})
	return s
}

// ServeStdioIfAsked serves NewServer over stdin/stdout and exits when the
// environment has EnvStdio=1 (the test binary started as a stdio server by
// StdioConfig); otherwise it returns at once. Call it first in TestMain.
func ServeStdioIfAsked() {
	if os.Getenv(EnvStdio) != "1" {
		return
	}
	s := NewServer("mcptest-stdio")
	if os.Getenv(EnvBanner) == "1" {
		fmt.Fprintln(os.Stdout, "mcptest server listening on stdio")
		sdk.AddTool(s, &sdk.Tool{Name: "noise", Description: "Print a line that is not JSON to stdout, then answer."},
			func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
				fmt.Fprintln(os.Stdout, "debug: noise was called")
				return text("quiet"), nil, nil
			})
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioConfig is a server config that runs the current test binary as the
// stdio server (its TestMain must call ServeStdioIfAsked).
func StdioConfig(t testing.TB) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Command: exe, Env: map[string]string{EnvStdio: "1"}}
}

// NewHTTPServer serves NewServer over Streamable HTTP until the test ends;
// the endpoint is the server's URL. With header (name, value) set, a
// request without that header value is answered 401.
func NewHTTPServer(t testing.TB, header ...string) *httptest.Server {
	return newHTTPServer(t, nil, header...)
}

// NewJSONHTTPServer is NewHTTPServer answering each request with one JSON
// body (application/json) instead of an event stream.
func NewJSONHTTPServer(t testing.TB) *httptest.Server {
	return newHTTPServer(t, &sdk.StreamableHTTPOptions{JSONResponse: true})
}

func newHTTPServer(t testing.TB, opts *sdk.StreamableHTTPOptions, header ...string) *httptest.Server {
	s := NewServer("mcptest-http")
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, opts)
	if len(header) == 2 {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(header[0]) != header[1] {
				http.Error(w, "unauthorised", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
