package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/mcp"
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
			def: llm.Tool{Name: t.Name, Description: desc, Parameters: t.InputSchema}, mcpServer: t.Server,
			run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
				res, err := m.Call(ctx, t.Name, raw)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err() // the turn was stopped: not the model's business
					}
					s.log.Info("mcp tool call failed", zap.String("tool", t.Name), zap.Error(err))
					return nil, toolErrorf("%s", err.Error())
				}
				return blocksResult{content: r.noteImageBlocks(s, res.Content), isError: res.IsError}, nil
			},
		})
	}
	return out
}

// mcpInstructions is the part of the system prompt that carries the
// instructions of the MCP servers whose tools ts offers (the
// "instructions" of their initialize result, how a model should use
// them), one paragraph per server in the order of ts; "" when none gave
// any. A server none of whose tools the agent is offered adds nothing.
func (r *Runner) mcpInstructions(ts []tool) string {
	m := r.opts.MCP
	if m == nil {
		return ""
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, t := range ts {
		if t.mcpServer == "" || seen[t.mcpServer] {
			continue
		}
		seen[t.mcpServer] = true
		text := m.Instructions(t.mcpServer)
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "Instructions of the MCP server %q (its tools are named %s%s*):\n%s", t.mcpServer, t.mcpServer, mcp.Separator, text)
	}
	return b.String()
}
