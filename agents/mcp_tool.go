package agents

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// blocksResult is a tool result given as transcript blocks (an MCP
// result: text and images) rather than a value runTool encodes as JSON.
type blocksResult struct {
	content []sessions.Content
	isError bool
}

// mcpTools returns the MCP tools the agent's policy allows, as the manager
// lists them now (a server making its first connection is waited for,
// within ctx). Every failure of a call (timeout, server gone during the
// call, unknown tool) is a tool error result the model reads; a result the
// server marks isError is an error result with the server's content.
func (r *Runner) mcpTools(ctx context.Context, s *session) []tool {
	m := r.opts.MCP
	if m == nil {
		return nil
	}
	var out []tool
	for _, t := range m.Tools(ctx, s.agent.Tools.allowsMCPServer) {
		if !s.agent.Tools.offersMCP(t.Server, t.Name) {
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = "Tool " + t.Remote + " of the MCP server " + t.Server + "."
		}
		out = append(out, tool{
			def: llm.Tool{Name: t.Name, Description: desc, Parameters: t.InputSchema},
			run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
				res, err := m.Call(ctx, t.Name, raw)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err() // the turn was stopped: not the model's business
					}
					s.log.Info("mcp tool call failed", zap.String("tool", t.Name), zap.Error(err))
					return nil, toolErrorf("%s", err.Error())
				}
				return blocksResult{content: res.Content, isError: res.IsError}, nil
			},
		})
	}
	return out
}
