package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// TestMCPProbeAndList runs `gateway mcp probe` and `gateway mcp list`
// (no daemon running) against the Streamable HTTP test server.
func TestMCPProbeAndList(t *testing.T) {
	srv := mcptest.NewHTTPServer(t)
	cfg := writeConfig(t, t.TempDir(), "", "mcp:\n  servers:\n"+
		"    remote: {url: "+srv.URL+", tools: {deny: [crash, grow]}}\n"+
		"    off: {url: "+srv.URL+", enabled: false}\n"+
		"    dead: {command: "+filepath.Join(t.TempDir(), "no-such-server")+", connectTimeout: 5s}\n")

	r := gw(t, cfg, "mcp", "probe", "remote").want(t, 0)
	for _, want := range []string{"server remote (http): mcptest-http 1.0.0", "8 tools offered (2 left out by tools.allow/deny)",
		"remote__echo\n  Return the text.", `"text": {`, `remote__dotted_name (server-side name "dotted.name")`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("probe output lacks %q:\n%s", want, r.Stdout)
		}
	}
	var res mcp.ProbeResult
	if err := json.Unmarshal([]byte(gw(t, cfg, "mcp", "probe", "remote", "--json").want(t, 0).Stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 8 || res.Tools[0].Name != "remote__add" || res.Tools[0].Remote != "add" || len(res.Tools[0].InputSchema) == 0 {
		t.Fatalf("probe --json = %+v", res)
	}

	r = gw(t, cfg, "mcp", "probe", "dead").want(t, 1)
	if !strings.Contains(r.Stderr, "mcp: probe dead: connect:") || !strings.Contains(r.Stderr, "no-such-server") {
		t.Errorf("probe of a missing command: %s", r.Stderr)
	}
	r = gw(t, cfg, "mcp", "probe", "nope").want(t, 1)
	if !strings.Contains(r.Stderr, `no server "nope" in mcp.servers (configured: dead, off, remote)`) {
		t.Errorf("probe of an unknown server: %s", r.Stderr)
	}
	gw(t, cfg, "mcp", "probe").want(t, 2)

	r = gw(t, cfg, "mcp", "list").want(t, 1) // dead is not ready
	for _, want := range []string{"daemon not running", "remote  http", "ready", "remote__echo", "off     http", "disabled",
		"dead    stdio", "error", "dead: mcp: probe dead: connect:"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("list output lacks %q:\n%s", want, r.Stdout)
		}
	}
	ok := writeConfig(t, t.TempDir(), "", "mcp: {servers: {remote: {url: "+srv.URL+"}}}\n")
	var body struct {
		Source  string
		Servers []mcp.Status
	}
	if err := json.Unmarshal([]byte(gw(t, ok, "mcp", "list", "--json").want(t, 0).Stdout), &body); err != nil {
		t.Fatal(err)
	}
	if body.Source != "probe" || len(body.Servers) != 1 || body.Servers[0].State != mcp.StateReady || len(body.Servers[0].Tools) != 10 {
		t.Fatalf("list --json = %+v", body)
	}
}

// TestConfigPrintRedactsMCPSecrets: header and environment values that
// look like credentials are not printed.
func TestConfigPrintRedactsMCPSecrets(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "", "mcp:\n  servers:\n"+
		"    gh: {url: 'https://mcp.example.com/mcp', headers: {Authorization: 'Bearer sekrit1', X-Api-Key: sekrit2, X-Client: gateway}}\n"+
		"    fs: {command: mcp-fs, env: {GITHUB_TOKEN: sekrit3, LOG_LEVEL: debug}}\n")
	r := gw(t, cfg, "config", "print").want(t, 0)
	if strings.Contains(r.Stdout, "sekrit") || !strings.Contains(r.Stdout, "X-Client: gateway") || !strings.Contains(r.Stdout, "LOG_LEVEL: debug") {
		t.Fatalf("config print:\n%s", r.Stdout)
	}
}

// TestMCPListFromDaemon: with the daemon running, `gateway mcp list` shows
// the daemon's own view (state, restarts, last error).
func TestMCPListFromDaemon(t *testing.T) {
	srv := mcptest.NewHTTPServer(t)
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	servers := "mcp:\n  servers:\n    remote: {url: " + srv.URL + "}\n    dead: {url: 'http://127.0.0.1:1/mcp'}\n"
	addr := startFromFile(t, writeYAML(t, reloadYAML(state, servers)))
	cfg := writeConfig(t, state, addr, servers)
	var body struct {
		Source  string
		Servers []mcp.Status
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := gw(t, cfg, "mcp", "list", "--json")
		if err := json.Unmarshal([]byte(r.Stdout), &body); err != nil {
			t.Fatalf("list --json: %v\n%s%s", err, r.Stdout, r.Stderr)
		}
		if len(body.Servers) == 2 && body.Servers[1].State == mcp.StateReady && body.Servers[0].Restarts > 0 {
			if r.Code != 1 {
				t.Fatalf("exit code %d with a server down", r.Code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list --json = %+v", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if body.Source != "daemon" || body.Servers[0].Name != "dead" || !strings.Contains(body.Servers[0].Error, "connect") || len(body.Servers[1].Tools) != 10 {
		t.Fatalf("list --json = %+v", body)
	}
	r := gw(t, cfg, "mcp", "list").want(t, 1)
	if strings.Contains(r.Stdout, "daemon not running") || !strings.Contains(r.Stdout, "restarting") || !strings.Contains(r.Stdout, "remote__echo") {
		t.Fatalf("list:\n%s", r.Stdout)
	}
}
