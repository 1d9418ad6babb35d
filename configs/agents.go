package configs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
)

// Agents is agents.defaults plus the agent list.
type Agents struct {
	Defaults agents.Defaults `mapstructure:"defaults"`
	List     []agents.Agent  `mapstructure:"list"`
}

// Validate checks the agents section on its own: the defaults, and that
// the list has agents with valid, distinct ids and valid tools. The models'
// providers are checked by Config.Validate.
func (a Agents) Validate() error {
	d := a.Defaults
	// The runner's own check, so validate and reload refuse what run would.
	if err := d.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("agents.defaults: %w", err)
	}
	if d.Model.Primary == "" {
		return fmt.Errorf("agents.defaults.model: the primary model is empty (want provider/model)")
	}
	if d.ContextWindow < 1000 {
		return fmt.Errorf("agents.defaults.contextWindow: %d is too small", d.ContextWindow)
	}
	if d.MaxConcurrent < 1 {
		return fmt.Errorf("agents.defaults.maxConcurrent: must be at least 1")
	}
	if d.Subagents.MaxConcurrent < 1 {
		return fmt.Errorf("agents.defaults.subagents.maxConcurrent: must be at least 1")
	}
	if d.TimeoutSeconds < 1 {
		return fmt.Errorf("agents.defaults.timeoutSeconds: must be at least 1")
	}
	if len(a.List) == 0 {
		return fmt.Errorf("agents.list: at least one agent is required")
	}
	seen := map[string]bool{}
	for i, ag := range a.List {
		if err := idError(fmt.Sprintf("agents.list[%d].id", i), "an agent id", ag.ID); err != nil {
			return err // the runner's rule (agents.Agent.Validate): ids are written normalised
		}
		if seen[ag.ID] {
			return fmt.Errorf("agents.list[%d].id: %q appears twice", i, ag.ID)
		}
		seen[ag.ID] = true
		if ag.ContextWindow < 0 {
			return fmt.Errorf("agents.list[%d].contextWindow: %d must not be negative", i, ag.ContextWindow)
		}
		if err := ag.Tools.Validate(); err != nil {
			return fmt.Errorf("agents.list[%d].%w", i, err)
		}
		if err := ag.Validate(); err != nil { // anything the runner checks that is not above
			return fmt.Errorf("agents.list[%d]: %w", i, err)
		}
	}
	return nil
}

// idError refuses an agent or account id that is not written in its
// normalised form (^[a-z0-9][a-z0-9_-]{0,63}$), suggesting that form.
func idError(key, what, id string) error {
	if routing.ValidID(id) {
		return nil
	}
	e := &Error{Key: key, Msg: fmt.Sprintf("%q is not %s: lower-case letters, digits, '_' and '-', starting with a letter or digit, at most 64", id, what)}
	if n, err := routing.NormalizeID(id); err == nil {
		e.Hint = fmt.Sprintf("did you mean %q?", n)
	}
	return e
}

// ids are the configured agents' ids, lower-cased.
func (a Agents) ids() map[string]bool {
	ids := make(map[string]bool, len(a.List))
	for _, ag := range a.List {
		ids[strings.ToLower(ag.ID)] = true
	}
	return ids
}

// validateAgentRefs checks what the agents section shares with others:
// every model (defaults and each agent's) names a configured provider, and
// every binding and jobs.timezoneByAgent entry a configured agent.
func (c *Config) validateAgentRefs() error {
	if err := c.checkModels("agents.defaults.model", c.Agents.Defaults.Model); err != nil {
		return err
	}
	for i, a := range c.Agents.List {
		if err := c.checkModels(fmt.Sprintf("agents.list[%d].model", i), a.Model); err != nil {
			return err
		}
	}
	if err := c.validateModelWindows(); err != nil {
		return err
	}
	ids := c.Agents.ids()
	for i, b := range c.Bindings {
		if !ids[strings.ToLower(b.AgentID)] {
			return fmt.Errorf("bindings[%d].agentId: agent %q is not in agents.list", i, b.AgentID)
		}
	}
	for _, id := range sortedKeys(c.Jobs.TimeZoneByAgent) {
		if !ids[id] { // looked up by the agent's id, which is lower case
			return fmt.Errorf("jobs.timezoneByAgent.%s: no agent %q in agents.list", id, id)
		}
	}
	return nil
}

// checkModels checks a model's primary and fallbacks against providers;
// the error names the bad key (agents.defaults.model.fallbacks[1]).
func (c *Config) checkModels(key string, m agents.Model) error {
	return agents.CheckModels(key, m, func(p string) bool {
		_, ok := c.Providers[p]
		return ok
	})
}

// validateModelWindows checks each providers.<p>.models.<m>.contextWindow
// against agents.defaults.compaction.reserveTokens, as the runner checks
// agents.defaults.contextWindow: a window at or below the reserve would
// compact before every model call. (Negative ones are refused by the
// provider's own Validate.)
func (c *Config) validateModelWindows() error {
	reserve := c.Agents.Defaults.WithDefaults().Compaction.ReserveTokens
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		models := c.Providers[name].Models
		for _, m := range slices.Sorted(maps.Keys(models)) {
			if w := models[m].ContextWindow; w > 0 && w <= reserve {
				return fmt.Errorf("providers.%s.models.%s.contextWindow %d: must be above agents.defaults.compaction.reserveTokens %d", name, m, w, reserve)
			}
		}
	}
	return nil
}
