package api

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// SearchResponse is the answer of GET /api/search.
type SearchResponse struct {
	Hits []sessions.SearchHit `json:"hits"`
}

// searchRoutes registers GET /api/search?q=&agent=&room=&since=&limit=:
// the transcripts of the configured agents' current sessions, through the
// storage seam's Searcher (sessions.SearchQuery has the semantics).
func (s *Server) searchRoutes() {
	s.mux.Handle("GET /api/search", s.auth(limitBody(http.HandlerFunc(s.search))))
	s.allow("/api/search", "GET")
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	for name := range v {
		switch name {
		case "q", "agent", "room", "since", "limit":
		default:
			// A misspelt filter (?agnet=ops) searched everything.
			writeError(w, http.StatusBadRequest, "unknown parameter "+strconv.Quote(name)+"; use q, agent, room, since, limit")
			return
		}
	}
	q := sessions.SearchQuery{Text: v.Get("q"), Room: v.Get("room"), Agents: s.opts.Agents}
	if a := strings.ToLower(v.Get("agent")); a != "" {
		if !slices.Contains(s.opts.Agents, a) {
			writeError(w, http.StatusNotFound, "agent "+v.Get("agent")+" not found")
			return
		}
		q.Agents = []string{a}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			writeError(w, http.StatusBadRequest, "limit: want a number from 1 to "+strconv.Itoa(sessions.MaxSearchLimit))
			return
		}
		q.Limit = n
	}
	var err error
	if q.Since, err = sessions.ParseSince(v.Get("since"), time.Now()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	hits, err := s.opts.Sessions.Search().Search(r.Context(), q)
	switch {
	case errors.Is(err, sessions.ErrBadQuery):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		if r.Context().Err() == nil {
			s.log.Error("search failed", zap.Error(err))
		}
		writeError(w, http.StatusInternalServerError, "search failed")
		return
	}
	writeJSON(w, http.StatusOK, SearchResponse{Hits: hits})
}
