package gatewayd

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

// TestMCPServersFollowReload: an MCP server added to the config file while
// the daemon runs is connected and its tools show in /api/mcp/servers; a
// tool filter change applies; removing it stops it.
func TestMCPServersFollowReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(reloadYAML(filepath.Join(dir, "state"), extra)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	addr := startFromFile(t, path, &fakeClock{})
	servers := func() []mcp.Status {
		res, err := http.Get("http://" + addr + "/api/mcp/servers")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct{ Servers []mcp.Status }
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/mcp/servers: %d %v", res.StatusCode, err)
		}
		return body.Servers
	}
	// waitFor writes the config and polls until cond holds; it writes
	// again every second (a write before the watcher is set up is missed).
	waitFor := func(what, extra string, cond func([]mcp.Status) bool) {
		t.Helper()
		write(extra)
		deadline := time.Now().Add(20 * time.Second)
		for i := 1; ; i++ {
			st := servers()
			if cond(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; servers = %+v", what, st)
			}
			time.Sleep(50 * time.Millisecond)
			if i%20 == 0 {
				write(extra)
			}
		}
	}
	if st := servers(); len(st) != 0 {
		t.Fatalf("servers before any is configured = %+v", st)
	}
	srv := mcptest.NewHTTPServer(t)
	waitFor("remote ready", "mcp: {servers: {remote: {url: "+srv.URL+", tools: {allow: [echo, add]}}}}\n", func(st []mcp.Status) bool {
		return len(st) == 1 && st[0].State == mcp.StateReady && slices.Equal(st[0].Tools, []string{"remote__add", "remote__echo"})
	})
	waitFor("the new filter", "mcp: {servers: {remote: {url: "+srv.URL+", tools: {allow: [echo]}}}}\n", func(st []mcp.Status) bool {
		return len(st) == 1 && slices.Equal(st[0].Tools, []string{"remote__echo"})
	})
	waitFor("remote removed", "", func(st []mcp.Status) bool { return len(st) == 0 })
}

// TestMCPToolInWebChatTurn runs the whole daemon: a web chat message makes
// the (fake) model call a tool of a Streamable HTTP MCP server, and the
// model's next request carries the tool's result.
func TestMCPToolInWebChatTurn(t *testing.T) {
	model := openaitest.NewServer(t)
	model.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "remote__add", Arguments: `{"a":2,"b":3}`}}},
		openaitest.Reply{Text: "it is 5"},
	)
	srv := mcptest.NewHTTPServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	yaml := reloadYAML(filepath.Join(dir, "state"), "providers: {oa: {type: openai, baseURL: "+model.BaseURL()+", apiKey: k, maxRetries: -1}}\n"+
		"agents: {defaults: {model: oa/gpt-test}, list: [{id: main, tools: {allow: ['mcp:remote']}}]}\n"+
		"mcp: {servers: {remote: {url: "+srv.URL+"}}}\n")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	reply, sid := chat(t, addr, "", "add 2 and 3")
	if reply != "it is 5" {
		t.Fatalf("reply = %q", reply)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var offered bool
	for _, tl := range reqs[0].Body.Tools {
		offered = offered || tl.Function.Name == "remote__add"
	}
	var sent bool
	for _, m := range reqs[1].Body.Messages {
		sent = sent || (m.Role == "tool" && m.ToolCallID == "call_1" && m.Content == "5")
	}
	if !offered || !sent {
		t.Fatalf("remote__add offered %v, its result in the next request %v: %+v", offered, sent, reqs[1].Body.Messages)
	}
	// The session's transcript, read through the store (the history the
	// API serves), holds the call and its result.
	res, err := http.Get("http://" + addr + "/api/agents/main/sessions/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var hist struct{ Messages []sessions.Message }
	if err := json.NewDecoder(res.Body).Decode(&hist); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET session %s: %d %v", sid, res.StatusCode, err)
	}
	var call, result bool
	for _, m := range hist.Messages {
		for _, c := range m.Content {
			call = call || (m.Role == sessions.RoleAssistant && c.Type == sessions.BlockToolCall && c.ID == "call_1" &&
				c.Name == "remote__add" && string(c.Arguments) == `{"a":2,"b":3}`)
		}
		result = result || (m.Role == sessions.RoleToolResult && m.ToolCallID == "call_1" && m.ToolName == "remote__add" && m.Text() == "5")
	}
	if !call || !result {
		t.Errorf("transcript has the call %v, its result %v: %+v", call, result, hist.Messages)
	}
}
