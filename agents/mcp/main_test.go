package mcp_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/gateway/gateway/agents/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	serveRawStdioIfAsked()
	goleak.VerifyTestMain(m)
}
