package agents

import (
	"slices"
	"sort"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Models are the "provider/model" names a session of agentID may switch
// to with /model: the agent's model and fallbacks, the defaults' model
// and fallbacks, and every providers.<name>.models entry, each only when
// its provider is configured. The agent's own model comes first, the rest
// sorted.
func (r *Runner) Models(agentID string) []string {
	a := r.agents[agentID]
	first := a.Model.Primary
	if first == "" {
		first = r.defaults.Model.Primary
	}
	seen := map[string]bool{}
	var rest []string
	add := func(name string) {
		if name == "" || seen[name] || !r.HasModel(name) {
			return
		}
		seen[name] = true
		rest = append(rest, name)
	}
	add(first)
	var out []string
	if len(rest) == 1 {
		out, rest = rest, nil
	}
	for _, m := range slices.Concat([]string{a.Model.Primary}, a.Model.Fallbacks,
		[]string{r.defaults.Model.Primary}, r.defaults.Model.Fallbacks) {
		add(m)
	}
	for m := range r.prices {
		add(m)
	}
	for m := range r.windows {
		add(m)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Thinks reports whether the model a session of agentID uses takes a
// reasoning effort (/think).
func (r *Runner) Thinks(agentID string, e sessions.Entry) bool {
	p, _, err := r.provider(r.modelName(r.agents[agentID], e))
	return err == nil && llm.Thinks(p)
}
