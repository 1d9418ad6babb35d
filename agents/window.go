package agents

import (
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// The context window a session's turns, compactions and /status use is
// that of the model the session uses (its model override, /model, else
// the agent's model, else agents.defaults.model):
//
//   - providers.<p>.models.<m>.contextWindow when that model has one,
//     capped by the agent's own contextWindow when the agent sets a
//     smaller one (an operator's limit for that agent);
//   - else the agent's contextWindow;
//   - else agents.defaults.contextWindow.
//
// A fallback model answering one call keeps the window of the session's
// model: the history was sized for it.

// ContextWindows are model context windows keyed "provider/model", as
// models are written in agents.*.model.
type ContextWindows map[string]int64

// ContextWindowsFrom collects providers.<name>.models.<model>.contextWindow.
func ContextWindowsFrom(providers map[string]llm.ProviderConfig) ContextWindows {
	out := ContextWindows{}
	for name, p := range providers {
		for model, m := range p.Models {
			if m.ContextWindow > 0 {
				out[name+"/"+model] = int64(m.ContextWindow)
			}
		}
	}
	return out
}

// ContextWindow returns the context window, in tokens, of the model a
// session of agentID in entry e uses (for /status's share of it).
func (r *Runner) ContextWindow(agentID string, e sessions.Entry) int64 {
	a := r.agents[agentID]
	return r.windowOf(a, r.modelName(a, e))
}

// windowOf is the window of agent a's sessions on model ("provider/model").
func (r *Runner) windowOf(a Agent, model string) int64 {
	if w := r.windows[model]; w > 0 {
		if a.ContextWindow > 0 && int64(a.ContextWindow) < w {
			return int64(a.ContextWindow)
		}
		return w
	}
	if a.ContextWindow > 0 {
		return int64(a.ContextWindow)
	}
	return int64(r.defaults.ContextWindow)
}

// compactAt is the context size (tokens) above which a turn compacts
// before its model call: window − reserveTokens, the reserve taking at
// most half of the window. A window the guard lets run (16k–32k, SPEC §5)
// may be at or below the default reserve of 20000; window − reserve would
// then be nothing, and every model call would compact the session down to
// its last message. Half the window is where pruning (maxHistoryShare
// 0.5) starts leaving turns out anyway.
func (r *Runner) compactAt(window int64) int64 {
	return window - min(int64(r.defaults.Compaction.ReserveTokens), window/2)
}
