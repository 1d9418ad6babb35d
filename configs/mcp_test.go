package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadMCP(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "gh")
	if err := os.WriteFile(secret, []byte("Bearer t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadBytes([]byte(`
mcp:
  servers:
    fs: {command: mcp-fs, args: [/srv/docs], env: {LOG: "1"}, tools: {deny: [write_*]}, timeout: 30s}
    gh:
      url: https://mcp.example.com/mcp
      headerFiles: {Authorization: `+secret+`}
      enabled: false
agents:
  list:
    - id: main
      tools: {allow: ["mcp:fs", gh__create_issue]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := c.MCP.Servers["fs"]
	if fs.Command != "mcp-fs" || fs.Timeout != 30*time.Second || fs.Tools.Deny[0] != "write_*" || !fs.IsEnabled() {
		t.Fatalf("fs = %+v", fs)
	}
	if gh := c.MCP.Servers["gh"]; gh.IsEnabled() || gh.Transport() != "http" {
		t.Fatalf("gh = %+v", gh)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"no transport":   {"mcp: {servers: {fs: {args: [x]}}}", "mcp.servers.fs.command: set command (a stdio server) or url"},
		"unknown key":    {"mcp: {servers: {fs: {comand: x}}}", "comand"},
		"bad duration":   {"mcp: {servers: {fs: {command: x, timeout: soon}}}", "timeout"},
		"missing secret": {"mcp: {servers: {gh: {url: 'http://h/', headerFiles: {Authorization: /nonexistent/file}}}}", "mcp.servers.gh.headerFiles.Authorization"},
		"unknown server": {"agents: {list: [{id: main, tools: {allow: ['mcp:nope']}}]}", `agents.list[0].tools: names the MCP server "nope", which mcp.servers does not have`},
		"unknown tool server": {"mcp: {servers: {fs: {command: x}}}\nagents: {list: [{id: main, tools: {deny: [gh__x]}}]}",
			`names the MCP server "gh"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tc.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadBytes = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
