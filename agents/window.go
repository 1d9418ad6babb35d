package agents

import "github.com/gateway/gateway/sessions"

// ContextWindow returns the context window, in tokens, of the model a
// session of agentID uses (for /status's share of it): the agent's
// contextWindow, else agents.defaults.contextWindow.
func (r *Runner) ContextWindow(agentID string, _ sessions.Entry) int64 {
	return r.window(r.agents[agentID])
}
