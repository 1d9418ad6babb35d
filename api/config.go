package api

import "net/http"

// configRoutes serves GET /api/config: the effective config in force (a
// hot reload included) as `gateway config print --json` shows it, with
// every secret redacted (configs.Tree): what the console's read-only
// config view shows. Options.Config nil: 404.
func (s *Server) configRoutes() {
	s.allow("/api/config", "GET")
	s.mux.Handle("GET /api/config", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Config == nil {
			writeError(w, http.StatusNotFound, "config not available")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"config": s.opts.Config()})
	})))
}
