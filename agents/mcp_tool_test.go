package agents

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// startMCP runs a manager over servers until the test ends.
func startMCP(t *testing.T, servers map[string]mcp.ServerConfig) *mcp.Manager {
	t.Helper()
	m := mcp.New(mcp.Options{Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	m.Apply(mcp.Config{Servers: servers})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return m
}

func toolResults(hist []sessions.Message) []sessions.Message {
	var out []sessions.Message
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult {
			out = append(out, m)
		}
	}
	return out
}

// TestMCPToolsThroughTurn runs a turn against the fake OpenAI server whose
// model calls tools of a stdio MCP server and of a Streamable HTTP one;
// the per-agent policy decides what is offered and run, and the
// transcript holds every call and its result as pi writes them.
func TestMCPToolsThroughTurn(t *testing.T) {
	httpSrv := mcptest.NewHTTPServer(t)
	m := startMCP(t, map[string]mcp.ServerConfig{
		"local":  mcptest.StdioConfig(t),
		"remote": {URL: httpSrv.URL, Tools: mcp.Filter{Deny: []string{"crash"}}},
	})
	srv, p := fakeOpenAI(t)
	h := newHarnessWith(t, Defaults{}, []Agent{
		{ID: "main", Model: Model{Primary: "oa/gpt-test"}, Tools: Tools{Allow: []string{"mcp:local", "remote__echo"}, Deny: []string{"local__fail"}}},
		{ID: "plain", Model: Model{Primary: "oa/gpt-test"}},
	}, nil, map[string]llm.Provider{"oa": p})
	h.r.opts.MCP = m
	srv.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{
			{ID: "call_1", Name: "local__add", Arguments: `{"a":2,"b":3}`},
			{ID: "call_2", Name: "remote__echo", Arguments: `{"text":"over http"}`},
		}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{
			{ID: "call_3", Name: "local__image", Arguments: `{}`},
			{ID: "call_4", Name: "local__fail", Arguments: `{}`},
			{ID: "call_5", Name: "remote__add", Arguments: `{"a":1,"b":1}`},
		}},
		openaitest.Reply{Text: "2 and 3 make 5."},
		openaitest.Reply{Text: "no tools here"},
	)
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("add 2 and 3")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "2 and 3 make 5." {
		t.Fatalf("text = %q", res.Text)
	}
	reqs := srv.Requests()
	var offered []string
	for _, tl := range reqs[0].Body.Tools {
		offered = append(offered, tl.Function.Name)
	}
	want := []string{"sessions_list", "sessions_history", "local__add", "local__big", "local__crash", "local__dotted_name", "local__echo",
		"local__grow", "local__image", "local__pid", "local__sleep", "remote__echo"} // the servers list their tools by name
	if !slices.Equal(offered, want) {
		t.Fatalf("tools offered = %v, want %v", offered, want)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist)
	results := toolResults(hist)
	if len(results) != 5 {
		t.Fatalf("%d tool results: %+v", len(results), hist)
	}
	checks := []struct {
		id, name string
		isError  bool
		text     string
	}{
		{"call_1", "local__add", false, "5"},
		{"call_2", "remote__echo", false, "over http"},
		{"call_3", "local__image", false, "a dot\n\n[image: image/png, 70 bytes]"},
		{"call_4", "local__fail", true, `unknown tool \"local__fail\"`},
		{"call_5", "remote__add", true, `unknown tool \"remote__add\"`},
	}
	for i, c := range checks {
		r := results[i]
		if r.ToolCallID != c.id || r.ToolName != c.name || r.IsError != c.isError || !strings.Contains(r.Text(), c.text) {
			t.Errorf("result %d = %+v, want %s %s isError=%v %q", i, r, c.id, c.name, c.isError, c.text)
		}
	}
	if img := results[2].Content; len(img) != 2 || img[1].Type != sessions.BlockImage || img[1].MimeType != "image/png" || img[1].Data == "" {
		t.Errorf("image result content = %+v, want a text and a pi image block", img)
	}
	var sawSum bool
	for _, msg := range reqs[1].Body.Messages {
		if msg.Role == "tool" && msg.ToolCallID == "call_1" && msg.Content == "5" {
			sawSum = true
		}
	}
	if !sawSum {
		t.Fatalf("the model did not get the MCP result: %+v", reqs[1].Body.Messages)
	}
	// The servers' instructions reach the model with their tools, each
	// once; the parts of a multi-part result reach it apart.
	sys := reqs[0].Body.Messages[0]
	for _, server := range []string{"local", "remote"} {
		want := "Instructions of the MCP server \"" + server + "\" (its tools are named " + server + "__*):\n" + mcptest.Instructions
		if sys.Role != "system" || strings.Count(sys.Content, want) != 1 {
			t.Fatalf("system prompt lacks %q once:\n%s", want, sys.Content)
		}
	}
	var sawParts bool
	for _, msg := range reqs[2].Body.Messages {
		sawParts = sawParts || (msg.Role == "tool" && msg.ToolCallID == "call_3" && strings.HasPrefix(msg.Content, "a dot\n\n[image: image/png, 70 bytes]\n\n"))
	}
	if !sawParts {
		t.Fatalf("the image result's parts did not reach the model apart: %+v", reqs[2].Body.Messages)
	}

	// An agent whose policy names no MCP tool gets none.
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "plain", Key: h.key("plain", "2"), Inputs: []sessions.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	for _, tl := range srv.Requests()[3].Body.Tools {
		if strings.Contains(tl.Function.Name, "__") {
			t.Fatalf("plain agent offered %s", tl.Function.Name)
		}
	}
	if sys := srv.Requests()[3].Body.Messages[0]; strings.Contains(sys.Content, mcptest.Instructions) {
		t.Fatalf("plain agent (no MCP tools) got the servers' instructions:\n%s", sys.Content)
	}
}

// TestMCPServerCrashAndTimeout: a stdio server that exits during a call
// and a call past its timeout each give the model a tool error result; the
// turn completes, and the next turn's call reaches the restarted server.
//
// Only the sleep runs under the short timeout: the model (the fake
// provider) lowers it just before it asks for the sleep and raises it
// again before the next call (a timeout change applies without
// reconnecting), so no other call has to finish within 300 ms on a loaded
// machine.
func TestMCPServerCrashAndTimeout(t *testing.T) {
	cfg := mcptest.StdioConfig(t)
	cfg.Timeout = 30 * time.Second
	m := startMCP(t, map[string]mcp.ServerConfig{"local": cfg})
	withTimeout := func(d time.Duration) {
		c := cfg
		c.Timeout = d
		m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"local": c}})
	}
	h := newHarness(t, Defaults{}, []Agent{{ID: "main", Tools: Tools{Allow: []string{"mcp:*"}}}}, nil)
	h.r.opts.MCP = m
	var pid string
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case n == 0:
			return assistantCall("c1", "local__pid", map[string]any{}), nil
		case n == 1:
			pid = last.Text()
			withTimeout(300 * time.Millisecond)
			return assistantCall("c2", "local__sleep", map[string]any{"ms": 10000}), nil
		case n == 2:
			withTimeout(30 * time.Second)
			return assistantCall("c3", "local__crash", map[string]any{}), nil
		case n == 4:
			return assistantCall("c4", "local__pid", map[string]any{}), nil
		}
		return assistantText("done"), nil
	}
	k := h.key("main", "1")
	for i, input := range []string{"crash it", "again"} {
		res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user(input)}})
		if err != nil || res.Text != "done" {
			t.Fatalf("turn %d: %q, %v", i, res.Text, err)
		}
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	checkPaired(t, "transcript", hist)
	results := toolResults(hist)
	if len(results) != 4 {
		t.Fatalf("%d tool results: %+v", len(results), hist)
	}
	if results[0].IsError || pid == "" {
		t.Fatalf("pid result = %+v", results[0])
	}
	if r := results[1]; !r.IsError || !strings.Contains(r.Text(), "timed out after 300ms") {
		t.Fatalf("timeout result = %+v", r)
	}
	if r := results[2]; !r.IsError || !strings.Contains(r.Text(), "the server stopped during the call") {
		t.Fatalf("crash result = %+v", r)
	}
	if r := results[3]; r.IsError || r.Text() == pid || r.Text() == "" {
		t.Fatalf("pid after the restart = %+v (was %s)", r, pid)
	}
}

func TestMCPToolPolicy(t *testing.T) {
	tests := []struct {
		name   string
		tools  Tools
		offers map[string]bool // "server/tool name"
		err    string
	}{
		{"off by default", Tools{}, map[string]bool{"gh/gh__issues": false}, ""},
		{"every server", Tools{Allow: []string{"mcp:*"}}, map[string]bool{"gh/gh__issues": true, "fs/fs__read": true}, ""},
		{"one server", Tools{Allow: []string{"mcp:gh"}}, map[string]bool{"gh/gh__issues": true, "fs/fs__read": false}, ""},
		{"one tool", Tools{Allow: []string{"fs__read"}}, map[string]bool{"fs/fs__read": true, "fs/fs__write": false}, ""},
		{"deny wins", Tools{Allow: []string{"mcp:*"}, Deny: []string{"fs__write", "mcp:gh"}},
			map[string]bool{"fs/fs__read": true, "fs/fs__write": false, "gh/gh__issues": false}, ""},
		{"mixed with built-ins", Tools{Allow: []string{"web_fetch", "mcp:fs"}}, map[string]bool{"fs/fs__read": true}, ""},
		{"bad server", Tools{Allow: []string{"mcp:Big_Server"}}, nil, `tools.allow: "mcp:Big_Server": want mcp:* or mcp:<server>`},
		{"bad tool", Tools{Deny: []string{"fs__"}}, nil, `tools.deny: "fs__": an MCP tool is named <server>__<tool>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Agent{ID: "main", Tools: tt.tools}.Validate()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for st, want := range tt.offers {
				server, name, _ := strings.Cut(st, "/")
				if got := tt.tools.offersMCP(server, name); got != want {
					t.Errorf("offersMCP(%s, %s) = %v, want %v", server, name, got, want)
				}
				if want && !tt.tools.allowsMCPServer(server) {
					t.Errorf("allowsMCPServer(%s) = false though %s is offered", server, name)
				}
			}
		})
	}
	if got := (Tools{Allow: []string{"mcp:*", "mcp:gh", "fs__read", "web_fetch"}, Deny: []string{"gh__x"}}).MCPServers(); !slices.Equal(got, []string{"gh", "fs"}) {
		t.Errorf("MCPServers = %v", got)
	}
}
