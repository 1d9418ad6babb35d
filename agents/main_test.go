package agents

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/gateway/gateway/agents/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked() // the MCP tests run this binary as a stdio server
	goleak.VerifyTestMain(m)
}
