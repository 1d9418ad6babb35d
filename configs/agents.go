package configs

import (
	"fmt"
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
		id := strings.ToLower(ag.ID)
		if !routing.ValidID(id) {
			return fmt.Errorf("agents.list[%d].id: %q is not a valid agent id", i, ag.ID)
		}
		if seen[id] {
			return fmt.Errorf("agents.list[%d].id: %q appears twice", i, ag.ID)
		}
		seen[id] = true
		if err := ag.Tools.Validate(); err != nil {
			return fmt.Errorf("agents.list[%d].%w", i, err)
		}
	}
	return nil
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
// every binding a configured agent.
func (c *Config) validateAgentRefs() error {
	if err := c.checkModels("agents.defaults.model", c.Agents.Defaults.Model); err != nil {
		return err
	}
	for i, a := range c.Agents.List {
		if err := c.checkModels(fmt.Sprintf("agents.list[%d].model", i), a.Model); err != nil {
			return err
		}
	}
	ids := c.Agents.ids()
	for i, b := range c.Bindings {
		if !ids[strings.ToLower(b.AgentID)] {
			return fmt.Errorf("bindings[%d].agentId: agent %q is not in agents.list", i, b.AgentID)
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
