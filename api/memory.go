package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// memoryRoutes serve the agents' notes (issue 24, `gateway memory`), for
// the operator. A scope is the agent of the path, its kind (agent, sender,
// room) and, but for the agent kind, ?scope=<channel>:<id>:
//
//	GET    /api/agents/{id}/memory                          -> {scopes: [...]}
//	GET    /api/agents/{id}/memory/{kind}?scope=            -> {scope, notes: [...]}
//	POST   /api/agents/{id}/memory/{kind}?scope=  {text}    -> 201 {note} (409 full, 400 too long)
//	PATCH  /api/agents/{id}/memory/{kind}/{note}?scope= {text} -> {note} (404 no such note)
//	DELETE /api/agents/{id}/memory/{kind}/{note}?scope=     -> {forgotten: 1} (404)
//	DELETE /api/agents/{id}/memory/{kind}?scope=            -> {forgotten: n}
//
// Writes obey the agent's configured limits (Options.MemoryLimits).
func (s *Server) memoryRoutes() {
	mem := func() sessions.Memory { return s.opts.Sessions.Memory() }
	s.allow("/api/agents/{id}/memory", "GET")
	s.allow("/api/agents/{id}/memory/{kind}", "GET", "POST", "DELETE")
	s.allow("/api/agents/{id}/memory/{kind}/{note}", "PATCH", "DELETE")
	s.handle("GET /api/agents/{id}/memory", func(w http.ResponseWriter, r *http.Request) {
		l, err := mem().MemoryScopes(r.Context(), strings.ToLower(r.PathValue("id")))
		if err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"scopes": l})
	})
	s.handle("GET /api/agents/{id}/memory/{kind}", func(w http.ResponseWriter, r *http.Request) {
		scope, ok := memoryScope(w, r)
		if !ok {
			return
		}
		notes, err := mem().Notes(r.Context(), scope)
		if err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"scope": scope, "notes": notes})
	})
	s.handle("POST /api/agents/{id}/memory/{kind}", func(w http.ResponseWriter, r *http.Request) {
		scope, ok := memoryScope(w, r)
		var body struct {
			Text string `json:"text"`
		}
		if !ok || !decodeJSON(w, r, &body, false) {
			return
		}
		n, err := mem().AddNote(r.Context(), scope, body.Text, time.Now(), s.memoryLimits(scope.AgentID))
		if err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"note": n})
	})
	s.handle("PATCH /api/agents/{id}/memory/{kind}/{note}", func(w http.ResponseWriter, r *http.Request) {
		scope, ok := memoryScope(w, r)
		if !ok {
			return
		}
		id, ok := noteID(w, r)
		var body struct {
			Text string `json:"text"`
		}
		if !ok || !decodeJSON(w, r, &body, false) {
			return
		}
		n, err := mem().UpdateNote(r.Context(), scope, id, body.Text, time.Now(), s.memoryLimits(scope.AgentID))
		if err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"note": n})
	})
	s.handle("DELETE /api/agents/{id}/memory/{kind}/{note}", func(w http.ResponseWriter, r *http.Request) {
		scope, ok := memoryScope(w, r)
		if !ok {
			return
		}
		id, ok := noteID(w, r)
		if !ok {
			return
		}
		if err := mem().ForgetNote(r.Context(), scope, id); err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"forgotten": 1})
	})
	s.handle("DELETE /api/agents/{id}/memory/{kind}", func(w http.ResponseWriter, r *http.Request) {
		scope, ok := memoryScope(w, r)
		if !ok {
			return
		}
		n, err := mem().ForgetScope(r.Context(), scope)
		if err != nil {
			s.memoryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"forgotten": n})
	})
}

// memoryScope reads the scope of a request, answering 400 for a bad one.
func memoryScope(w http.ResponseWriter, r *http.Request) (sessions.MemoryScope, bool) {
	scope := sessions.MemoryScope{AgentID: strings.ToLower(r.PathValue("id")), Kind: r.PathValue("kind"), ID: r.URL.Query().Get("scope")}
	if err := sessions.CheckMemoryScope(scope); err != nil {
		writeError(w, http.StatusBadRequest, "memory scope: "+err.Error())
		return scope, false
	}
	return scope, true
}

// noteID reads the {note} of a request, answering 400 for a bad one.
func noteID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("note"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "note "+strconv.Quote(r.PathValue("note"))+": want a note number")
		return 0, false
	}
	return id, true
}

func (s *Server) memoryLimits(agentID string) sessions.MemoryLimits {
	if s.opts.MemoryLimits == nil {
		return sessions.MemoryLimits{}.WithDefaults()
	}
	return s.opts.MemoryLimits(agentID)
}

// memoryError answers a store error: 404 no such note, 409 a full scope,
// 400 a note refused for its text, 500 otherwise (logged).
func (s *Server) memoryError(w http.ResponseWriter, err error) {
	var full *sessions.MemoryFullError
	switch {
	case errors.Is(err, sessions.ErrNoNote):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &full):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, sessions.ErrBadNote):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		s.log.Error("memory store failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "memory unavailable")
	}
}
