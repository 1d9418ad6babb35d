package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// turnPreview is what `sessions show --context` adds to the messages: the
// system prompt and the tools a turn of the session would send now.
type turnPreview struct {
	System string   `json:"system"`
	Tools  []string `json:"tools"`
	// MCPServers are the MCP servers whose tools the agent may be offered;
	// which tools they have is known to the running daemon
	// (`gateway mcp tools`).
	MCPServers []string `json:"mcpServers,omitempty"`
}

// previewTurn builds the system prompt and tool list of a turn in the
// session, from the config: the agent's prompt and the room's prompt for
// the session's chat (its last account, the key's peer and thread: a
// Discord guild's own rules apply in the daemon only, where the guild is
// known), the built-in tools the agent's policy offers.
func previewTurn(cfg *configs.Config, f found) (turnPreview, error) {
	var agent agents.Agent
	for _, a := range cfg.Agents.List {
		if strings.EqualFold(a.ID, f.AgentID) {
			agent = a
		}
	}
	if agent.ID == "" {
		return turnPreview{}, fmt.Errorf("sessions show: agent %q is not in agents.list", f.AgentID)
	}
	roomPrompt := ""
	if in, ok := chatOf(f.Key, f.Entry); ok {
		rt, err := gatewayd.RouteRuntime(cfg)
		if err != nil {
			return turnPreview{}, err
		}
		roomPrompt = rt.RoomFor(in).SystemPrompt
	}
	servers := make([]string, 0, len(cfg.MCP.Servers))
	for n := range cfg.MCP.Servers {
		servers = append(servers, n)
	}
	sort.Strings(servers)
	return turnPreview{
		System:     agents.SystemPrompt(agent, f.Key, roomPrompt),
		Tools:      agents.BuiltinTools(agent, f.Key, true),
		MCPServers: agents.MCPServersOffered(agent, servers),
	}, nil
}

// chatOf is the chat a channel session's turns come from, as far as the
// key and the entry tell it; false for a session of no chat (main, web,
// subagent).
func chatOf(k routing.Key, e sessions.Entry) (channels.Inbound, bool) {
	if k.Channel == "" || k.Peer == "" {
		return channels.Inbound{}, false
	}
	in := channels.Inbound{ChatType: channels.ChatType(k.Kind)}
	in.Channel, in.AccountID, in.ChatID, in.ThreadID, in.IsTopic = k.Channel, k.Account, k.Peer, k.Thread, k.ThreadKind == routing.Topic
	if in.AccountID == "" {
		in.AccountID = e.LastAccountID
	}
	if in.AccountID == "" {
		in.AccountID = "default"
	}
	return in, true
}

// printPreview writes the system prompt and tools before the messages.
func printPreview(w io.Writer, p turnPreview) {
	fmt.Fprintln(w, "system prompt:")
	if p.System == "" {
		fmt.Fprintln(w, "  (none)")
	}
	for _, line := range strings.Split(p.System, "\n") {
		if p.System != "" {
			fmt.Fprintln(w, "  "+line)
		}
	}
	tools := strings.Join(p.Tools, ", ")
	if tools == "" {
		tools = "(none)"
	}
	fmt.Fprintf(w, "tools: %s\n", tools)
	if len(p.MCPServers) > 0 {
		fmt.Fprintf(w, "MCP tools of: %s (listed by `gateway mcp tools` while the daemon runs)\n", strings.Join(p.MCPServers, ", "))
	}
}
