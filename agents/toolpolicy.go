package agents

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gateway/gateway/agents/mcp"
)

// Built-in tool names.
const (
	webFetchToolName = "web_fetch"
	listToolName     = "sessions_list"
	historyToolName  = "sessions_history"
	// MessageToolName is the message tool (message_tool.go).
	MessageToolName = "message"
	searchToolName  = "sessions_search"
	// ScheduleToolName is the schedule tool (schedule_tool.go).
	ScheduleToolName = "schedule"
)

// optInTools are built-in tools an agent is offered only when its
// tools.allow names them; the sessions tools are on unless denied.
var optInTools = []string{webFetchToolName, webSearchToolName, MessageToolName, searchToolName, ScheduleToolName}

var builtinTools = []string{spawnToolName, listToolName, historyToolName, webFetchToolName, webSearchToolName, MessageToolName, searchToolName,
	memoryAddToolName, memoryUpdateToolName, memoryForgetToolName, memorySearchToolName, ScheduleToolName}

// Tools is an agent's tool policy (agents.list[].tools). Allow turns on
// opt-in built-in tools (web_fetch, web_search); Deny takes any built-in tool away and
// wins over Allow. Names are checked against the built-in tools. MCP tools
// are opt-in too, named in either list as "mcp:*" (every server's),
// "mcp:<server>" (one server's) or "<server>__<tool>" (one tool).
type Tools struct {
	Allow []string `mapstructure:"allow"`
	Deny  []string `mapstructure:"deny"`
	// SessionsSearch configures sessions_search (search_tool.go).
	SessionsSearch SearchToolConfig `mapstructure:"sessionsSearch"`
}

// Validate checks that every name is a built-in tool.
func (t Tools) Validate() error {
	var errs []error
	for _, f := range []struct {
		field string
		names []string
	}{{"allow", t.Allow}, {"deny", t.Deny}} {
		field := f.field
		for _, n := range f.names {
			if isMCPEntry(n) {
				if err := validMCPEntry(n); err != nil {
					errs = append(errs, fmt.Errorf("tools.%s: %w", field, err))
				}
				continue
			}
			if !slices.Contains(builtinTools, n) {
				errs = append(errs, fmt.Errorf("tools.%s: unknown tool %q (built-in: %v; MCP: mcp:*, mcp:<server>, <server>__<tool>)", field, n, builtinTools))
			}
		}
	}
	errs = append(errs, t.SessionsSearch.Validate())
	return errors.Join(errs...)
}

// offers reports whether the policy lets the agent use the named tool.
func (t Tools) offers(name string) bool {
	if slices.Contains(t.Deny, name) {
		return false
	}
	if slices.Contains(optInTools, name) {
		return slices.Contains(t.Allow, name)
	}
	return true
}

// mcpPrefix starts a policy entry naming MCP servers: "mcp:*", "mcp:<server>".
const mcpPrefix = "mcp:"

func isMCPEntry(n string) bool {
	return strings.HasPrefix(n, mcpPrefix) || strings.Contains(n, mcp.Separator)
}

func validMCPEntry(n string) error {
	if server, ok := strings.CutPrefix(n, mcpPrefix); ok {
		if server == "*" || mcp.ValidServerName(server) {
			return nil
		}
		return fmt.Errorf("%q: want mcp:* or mcp:<server> with a server name of mcp.servers", n)
	}
	server, tool, _ := strings.Cut(n, mcp.Separator)
	if !mcp.ValidServerName(server) || tool == "" {
		return fmt.Errorf("%q: an MCP tool is named <server>__<tool>", n)
	}
	return nil
}

// MCPServers returns the server names the policy's entries name ("mcp:x",
// "x__tool"), without "*", for checking them against mcp.servers.
func (t Tools) MCPServers() []string {
	var out []string
	for _, n := range slices.Concat(t.Allow, t.Deny) {
		if !isMCPEntry(n) || validMCPEntry(n) != nil {
			continue
		}
		server, ok := strings.CutPrefix(n, mcpPrefix)
		if !ok {
			server, _, _ = strings.Cut(n, mcp.Separator)
		}
		if server != "*" && !slices.Contains(out, server) {
			out = append(out, server)
		}
	}
	return out
}

// offersMCP reports whether the policy lets the agent use the MCP tool
// name (as offered, "<server>__<tool>") of server: named in Allow (the
// tool, its server or every server) and not in Deny.
func (t Tools) offersMCP(server, name string) bool {
	match := func(list []string) bool {
		return slices.Contains(list, name) || slices.Contains(list, mcpPrefix+server) || slices.Contains(list, mcpPrefix+"*")
	}
	return !match(t.Deny) && match(t.Allow)
}

// allowsMCPServer reports whether any tool of server may be offered.
func (t Tools) allowsMCPServer(server string) bool {
	if slices.Contains(t.Deny, mcpPrefix+server) || slices.Contains(t.Deny, mcpPrefix+"*") {
		return false
	}
	for _, n := range t.Allow {
		if n == mcpPrefix+"*" || n == mcpPrefix+server || strings.HasPrefix(n, server+mcp.Separator) {
			return true
		}
	}
	return false
}
