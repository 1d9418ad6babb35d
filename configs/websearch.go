package configs

import (
	"fmt"
	"slices"
)

// validateWebSearch checks the webSearch section and that an agent whose
// tools.allow names web_search has a provider to search with (off by
// default: no provider, no web_search).
func (c *Config) validateWebSearch() error {
	if err := c.WebSearch.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("webSearch.%w", err)
	}
	for i, a := range c.Agents.List {
		if slices.Contains(a.Tools.Allow, "web_search") && !c.WebSearch.Enabled() {
			return fmt.Errorf("agents.list[%d].tools.allow: names web_search, but webSearch.provider is not set (searxng or brave)", i)
		}
	}
	return nil
}
