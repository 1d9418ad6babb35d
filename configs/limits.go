package configs

import (
	"fmt"
	"slices"
	"strings"
)

// validateLimits checks the limits section and that each agent it
// overrides is configured.
func (c *Config) validateLimits() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	ids := make([]string, 0, len(c.Agents.List))
	for _, a := range c.Agents.List {
		ids = append(ids, strings.ToLower(a.ID))
	}
	for id := range c.Limits.Agents {
		if !slices.Contains(ids, strings.ToLower(id)) {
			return fmt.Errorf("limits.agents.%s: no agent %q in agents.list", id, id)
		}
	}
	return nil
}
