package api

import (
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/usagereport"
)

// usageRoutes serves GET /api/usage?agent=&by=&since= (authenticated like
// every /api route): the usage ledger's buckets and their total, as
// `gateway usage --json` prints them.
func (s *Server) usageRoutes() {
	s.mux.Handle("GET /api/usage", s.auth(http.HandlerFunc(s.getUsage)))
	s.allow("/api/usage", "GET")
}

// getUsage answers a usage report; a bad parameter is a 400 naming it.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "agent", "by", "since":
		default:
			writeError(w, http.StatusBadRequest, "unknown parameter "+name+"; use agent, by, since")
			return
		}
	}
	f := sessions.UsageFilter{AgentID: strings.ToLower(q.Get("agent")), By: q.Get("by")}
	if f.AgentID != "" && !routing.ValidID(f.AgentID) {
		writeError(w, http.StatusBadRequest, "agent "+q.Get("agent")+": not a valid agent id")
		return
	}
	var err error
	if f.Since, err = usagereport.ParseSince(q.Get("since"), time.Now()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := sessions.CheckUsageFilter(f); err != nil {
		writeError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "usage filter: "))
		return
	}
	rep, err := usagereport.Query(r.Context(), s.opts.Sessions.Usage(), f)
	if err != nil {
		s.log.Error("usage report failed", zap.Error(err))
		writeError(w, http.StatusServiceUnavailable, "usage ledger unavailable")
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
