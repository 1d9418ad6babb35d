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
	waitFor := func(what string, cond func([]mcp.Status) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			st := servers()
			if cond(st) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; servers = %+v", what, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if st := servers(); len(st) != 0 {
		t.Fatalf("servers before any is configured = %+v", st)
	}
	srv := mcptest.NewHTTPServer(t)
	write("mcp: {servers: {remote: {url: " + srv.URL + ", tools: {allow: [echo, add]}}}}\n")
	waitFor("remote ready", func(st []mcp.Status) bool {
		return len(st) == 1 && st[0].State == mcp.StateReady && slices.Equal(st[0].Tools, []string{"remote__add", "remote__echo"})
	})
	write("mcp: {servers: {remote: {url: " + srv.URL + ", tools: {allow: [echo]}}}}\n")
	waitFor("the new filter", func(st []mcp.Status) bool {
		return len(st) == 1 && slices.Equal(st[0].Tools, []string{"remote__echo"})
	})
	write("")
	waitFor("remote removed", func(st []mcp.Status) bool { return len(st) == 0 })
}
