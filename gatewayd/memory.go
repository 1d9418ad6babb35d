package gatewayd

import (
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/sessions"
)

// memoryLimits adapts the agents' memory settings into what the API's
// memory routes need: an agent's limits by id (the defaults for an agent
// not in list).
func memoryLimits(list []agents.Agent) func(agentID string) sessions.MemoryLimits {
	limits := map[string]sessions.MemoryLimits{}
	for _, a := range list {
		limits[a.ID] = a.Memory.Limits()
	}
	return func(agentID string) sessions.MemoryLimits {
		if l, ok := limits[agentID]; ok {
			return l
		}
		return sessions.MemoryLimits{}.WithDefaults()
	}
}
