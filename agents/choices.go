package agents

import (
	"iter"
	"slices"
	"sort"
	"strings"

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
	for m := range r.choices(a) {
		add(m)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// choices yields the names Models is made of, unfiltered (repeats, names
// of providers not configured): the one list of where choices come from.
func (r *Runner) choices(a Agent) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, list := range [][]string{{a.Model.Primary}, a.Model.Fallbacks, {r.defaults.Model.Primary}, r.defaults.Model.Fallbacks} {
			for _, m := range list {
				if !yield(m) {
					return
				}
			}
		}
		for m := range r.prices {
			if !yield(m) {
				return
			}
		}
		for m := range r.windows {
			if !yield(m) {
				return
			}
		}
	}
}

// Offers reports whether a session of agentID may run on name
// ("provider/model"): one of its Models, the provider's name spelt as
// configured, the model's in any case. A session whose override the
// config no longer offers (the operator took the model out of the agent's,
// the defaults' and the providers' model lists) runs on the agent's model:
// a model nobody priced or listed is never used, nor a subagent's that the
// config does not name (spawn).
func (r *Runner) Offers(agentID, name string) bool { return r.offers(r.agents[agentID], name) }

// offers is Offers for agent a, without building Models' list (it runs
// for every turn whose session has an override).
func (r *Runner) offers(a Agent, name string) bool {
	if name == "" || !r.HasModel(name) {
		return false
	}
	for m := range r.choices(a) {
		if strings.EqualFold(m, name) {
			return true
		}
	}
	return false
}

// OfferedModel is name as the config spells it among agentID's Models
// (any case), false when it is not one: what spawn and the API store.
func (r *Runner) OfferedModel(agentID, name string) (string, bool) {
	models := r.Models(agentID)
	if i := slices.IndexFunc(models, func(m string) bool { return strings.EqualFold(m, name) }); i >= 0 {
		return models[i], true
	}
	return "", false
}

// Thinks reports whether the model a session of agentID uses takes a
// reasoning effort (/think).
func (r *Runner) Thinks(agentID string, e sessions.Entry) bool {
	p, _, err := r.provider(r.modelName(r.agents[agentID], e))
	return err == nil && llm.Thinks(p)
}
