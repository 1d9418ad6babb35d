package agents

import (
	"slices"

	"github.com/gateway/gateway/routing"
)

// BuiltinTools names the built-in tools a turn of agent a in session key
// offers the model, in the order it sees them: its tool policy applied,
// sessions_spawn only where subagents can be started (spawn: the runner
// has a dispatcher) and never to a subagent, the memory tools only with
// memory.enabled. The runner builds its tools
// from this list; `gateway sessions show --context` prints it.
func BuiltinTools(a Agent, key routing.Key, spawn bool) []string {
	var out []string
	for _, name := range builtinTools { // in the order the model sees them
		if name == spawnToolName && (!spawn || key.Subagent != "") {
			continue
		}
		if slices.Contains(memoryToolNames, name) && !a.Memory.Enabled {
			continue // offered with memory.enabled (memory.go)
		}
		if a.Tools.offers(name) {
			out = append(out, name)
		}
	}
	return out
}

// SystemPrompt is the system prompt a turn of agent a in session key
// sends: the agent's prompt (a subagent's with the note that it works for
// another session), then the room's (roomPrompt: the chat's room settings,
// "" for none).
func SystemPrompt(a Agent, key routing.Key, roomPrompt string) string {
	return withRoomPrompt(agentPrompt(a, key), roomPrompt)
}

// MCPServersOffered lists the MCP servers of servers whose tools agent a's
// policy may offer (which tools a server has is known to the running
// daemon only: `gateway mcp tools`).
func MCPServersOffered(a Agent, servers []string) []string {
	return slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return !a.Tools.allowsMCPServer(s) })
}
