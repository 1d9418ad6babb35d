package configs

import "fmt"

// validateMCP checks mcp.servers and that every MCP server an agent's
// tools.allow or tools.deny names is configured (a typo would otherwise
// silently offer nothing).
func (c *Config) validateMCP() error {
	if err := c.MCP.Validate(); err != nil {
		return fmt.Errorf("mcp.%w", err)
	}
	for i, a := range c.Agents.List {
		for _, s := range a.Tools.MCPServers() {
			if _, ok := c.MCP.Servers[s]; !ok {
				return fmt.Errorf("agents.list[%d].tools: names the MCP server %q, which mcp.servers does not have", i, s)
			}
		}
	}
	return nil
}
