package api

import "net/http"

// statusRoutes serves GET /api/status: what the daemon is doing (channel
// connections, providers, MCP servers, lanes, journal and outbox, storage,
// replicas), as `gateway status` prints it. It answers 200 while nothing
// is failing (overall ok or degraded) and 503 with the same body when
// something is, so a plain HTTP check can use it.
func (s *Server) statusRoutes() {
	s.allow("/api/status", "GET")
	s.mux.Handle("GET /api/status", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Status == nil {
			writeError(w, http.StatusNotFound, "status not available")
			return
		}
		body, failing := s.opts.Status(r.Context())
		code := http.StatusOK
		if failing {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, body)
	})))
}
