package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// maxOpenAIDescription is the longest function description OpenAI takes
// ("string_above_max_length ... maximum length 1024").
const maxOpenAIDescription = 1024

// An MCP tool is offered to an OpenAI model as the API takes it: its
// description cut to 1024 characters and its parameters an object schema
// with properties. Servers describe tools at length (the reference
// sequential-thinking server: some 2,800 characters) and the Go SDK lists
// a tool without arguments as {"type":"object","additionalProperties":false};
// OpenAI refuses a request carrying either (400), so no turn of an agent
// offered such a server's tools got an answer.
func TestMCPToolsOfferedAsOpenAITakesThem(t *testing.T) {
	long := strings.Repeat("Think step by step, revise earlier thoughts — é. ", 60) // 3,000 characters
	s := sdk.NewServer(&sdk.Implementation{Name: "think", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "think", Description: long},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "thought"}}}, nil, nil
		})
	httpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(httpSrv.Close)
	m := startMCP(t, map[string]mcp.ServerConfig{"seq": {URL: httpSrv.URL}})
	srv, p := fakeOpenAI(t)
	h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, Tools: Tools{Allow: []string{"mcp:seq"}}}},
		nil, map[string]llm.Provider{"oa": p})
	h.r.opts.MCP = m
	srv.Script(openaitest.Reply{Text: "ok"})
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("think")}}); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, tl := range srv.Requests()[0].Body.Tools {
		f := tl.Function
		if n := utf8.RuneCountInString(f.Description); n > maxOpenAIDescription {
			t.Errorf("tool %s: a description of %d characters, over OpenAI's %d", f.Name, n, maxOpenAIDescription)
		}
		var params map[string]any
		b, _ := json.Marshal(f.Parameters)
		if err := json.Unmarshal(b, &params); err != nil || params["type"] != "object" || params["properties"] == nil {
			t.Errorf("tool %s: parameters %s, want an object schema with properties", f.Name, b)
		}
		if f.Name == "seq__think" {
			found = true
			if !strings.HasPrefix(long, strings.TrimSuffix(f.Description, "…")) || !strings.HasSuffix(f.Description, "…") {
				t.Errorf("seq__think description = %q, want the start of the server's, marked as cut", f.Description)
			}
		}
	}
	if !found {
		t.Fatal("seq__think not offered")
	}
}

// An agent offered more tools than OpenAI takes in one request (128: a
// large MCP server, or several) gets the first 128 — the built-in tools
// first — where the API refused every request ("array too long").
func TestMCPToolsOverOpenAILimitAreCut(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1"}, nil)
	for i := range 140 {
		sdk.AddTool(s, &sdk.Tool{Name: fmt.Sprintf("t%03d", i), Description: "a tool"},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
			})
	}
	httpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(httpSrv.Close)
	m := startMCP(t, map[string]mcp.ServerConfig{"many": {URL: httpSrv.URL}})
	srv, p := fakeOpenAI(t)
	h := newHarnessWith(t, Defaults{}, []Agent{{ID: "main", Model: Model{Primary: "oa/gpt-test"}, Tools: Tools{Allow: []string{"mcp:many"}}}},
		nil, map[string]llm.Provider{"oa": p})
	h.r.opts.MCP = m
	srv.Script(openaitest.Reply{Text: "ok"})
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range srv.Requests()[0].Body.Tools {
		names = append(names, tl.Function.Name)
	}
	builtins := 0
	for _, n := range names {
		if !strings.HasPrefix(n, "many__") {
			builtins++
		}
	}
	if len(names) != 128 || builtins == 0 || strings.HasPrefix(names[0], "many__") || names[len(names)-1] != fmt.Sprintf("many__t%03d", 127-builtins) {
		t.Fatalf("%d tools offered (%v … %v), want the first 128, built-ins first", len(names), names[:3], names[len(names)-1])
	}
}
