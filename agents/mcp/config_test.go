package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
)

func TestConfigValidate(t *testing.T) {
	off := false
	tests := []struct {
		name string
		cfg  mcp.Config
		err  string
	}{
		{"stdio", mcp.Config{Servers: map[string]mcp.ServerConfig{"fs": {Command: "mcp-fs", Args: []string{"/tmp"}, Env: map[string]string{"A_B": "1"}}}}, ""},
		{"http", mcp.Config{Servers: map[string]mcp.ServerConfig{"gh": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"X-Key": "v"}, Timeout: time.Minute}}}, ""},
		{"disabled still checked", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Enabled: &off}}}, "servers.x.command: set command"},
		{"both", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Command: "a", URL: "http://h/"}}}, "servers.x.url: set either command"},
		{"bad url", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {URL: "ftp://h/"}}}, `servers.x.url: "ftp://h/" is not an http:// or https:// URL`},
		{"name", mcp.Config{Servers: map[string]mcp.ServerConfig{"My_Server": {Command: "a"}}}, "servers.My_Server: a server name is"},
		{"name with separator", mcp.Config{Servers: map[string]mcp.ServerConfig{"a__b": {Command: "a"}}}, "servers.a__b: a server name is"},
		{"headers on stdio", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Command: "a", Headers: map[string]string{"A": "b"}}}}, "servers.x.headers: headers and headerFiles are for url servers"},
		{"env on http", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {URL: "http://h/", Env: map[string]string{"A": "b"}}}}, "servers.x.args: args, env"},
		{"header name", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {URL: "http://h/", Headers: map[string]string{"Bad Name": "b"}}}}, "servers.x.headers.Bad Name: not a valid HTTP header"},
		{"env name", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Command: "a", EnvFiles: map[string]string{"1X": "/f"}}}}, "servers.x.envFiles.1X: not a valid environment variable name"},
		{"timeout", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Command: "a", Timeout: -time.Second}}}, "servers.x.timeout: -1s is not between"},
		{"pattern", mcp.Config{Servers: map[string]mcp.ServerConfig{"x": {Command: "a", Tools: mcp.Filter{Allow: []string{"[a"}}}}}, `servers.x.tools.allow: "[a" is not a tool name or pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestFilterAdmits(t *testing.T) {
	f := mcp.Filter{Allow: []string{"read_*", "list"}, Deny: []string{"read_secret"}}
	for tool, want := range map[string]bool{"read_file": true, "list": true, "read_secret": false, "write": false} {
		if got := f.Admits(tool); got != want {
			t.Errorf("Admits(%s) = %v, want %v", tool, got, want)
		}
	}
	if !(mcp.Filter{}).Admits("anything") {
		t.Error("an empty filter must admit every tool")
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct{ server, tool, want string }{
		{"gh", "create_issue", "gh__create_issue"},
		{"fs", "read.file/v2", "fs__read_file_v2"},
		{"fs", "ünï", "fs___n_"},
	}
	for _, tt := range tests {
		if got := mcp.ToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
	a, b := mcp.ToolName("s", long+"a"), mcp.ToolName("s", long+"b")
	if len(a) != 64 || len(b) != 64 || a == b || !strings.HasPrefix(a, "s__xxx") {
		t.Errorf("long names: %q %q", a, b)
	}
	if s, ok := mcp.SplitToolName(a); !ok || s != "s" {
		t.Errorf("SplitToolName(%q) = %q, %v", a, s, ok)
	}
	if _, ok := mcp.SplitToolName("web_fetch"); ok {
		t.Error("web_fetch split as an MCP tool")
	}
}
