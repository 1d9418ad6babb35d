package api

import (
	"net/http"

	"github.com/gateway/gateway/agents/mcp"
)

// mcpRoutes serves GET /api/mcp/servers: every configured MCP server with
// its connection state, restarts, last error and the tool names offered
// (`gateway mcp list` reads it from a running daemon).
func (s *Server) mcpRoutes() {
	s.allow("/api/mcp/servers", "GET")
	s.mux.Handle("GET /api/mcp/servers", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := []mcp.Status{}
		if s.opts.MCP != nil {
			st = append(st, s.opts.MCP()...)
		}
		writeJSON(w, http.StatusOK, map[string]any{"servers": st})
	})))
}
