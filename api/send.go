package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// POST /api/agents/{id}/sessions/{sid}/messages {text} sends an operator's
// message into a session (issue 27, `gateway sessions send`): {sid} is the
// session id or the session key. The daemon delivers it to the session's
// last chat through the outbox and records it in the transcript; no agent
// turn starts. Answers {sent: {...}}; 400 for a bad text, 404 for an
// unknown session, 409 when the session has no chat to send to.

// SendFunc delivers text from the operator into key's session (the
// dispatcher, through the assembler). Errors wrapping sessions.ErrNotFound
// answer 404, ErrBadRequest 400, ErrConflict 409, lanes.ErrClosed 503.
type SendFunc func(ctx context.Context, agentID string, key routing.Key, text string) (any, error)

// Errors a SendFunc wraps to choose the answer.
var (
	ErrBadRequest = errors.New("bad request")
	ErrConflict   = errors.New("conflict")
)

// SendRequest is the body of POST .../messages.
type SendRequest struct {
	Text string `json:"text"`
}

func (s *Server) sendRoutes() {
	const path = "/api/agents/{id}/sessions/{sid}/messages"
	if s.opts.Send == nil {
		return
	}
	s.handle("POST "+path, s.sendMessage)
	s.allow(path, "POST")
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	st, ok := s.store(w, r)
	if !ok {
		return
	}
	key, ok := s.sessionKey(w, r, st)
	if !ok {
		return
	}
	var req SendRequest
	if !decodeJSON(w, r, &req, false) {
		return
	}
	sent, err := s.opts.Send(r.Context(), st.AgentID(), key, req.Text)
	log := s.log.With(zap.String("op", "send"), zap.String("session_key", key.String()))
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"sent": sent})
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, userSafe(err))
	case errors.Is(err, sessions.ErrNotFound):
		writeError(w, http.StatusNotFound, "session "+key.String()+" not found")
	case errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, userSafe(err))
	case errors.Is(err, lanes.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting down; try again later")
	default:
		log.Error("operator message failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "send failed: "+userSafe(err))
	}
}

// sessionKey resolves {sid}, a session key of the agent or the id of a
// current session, to the session's key.
func (s *Server) sessionKey(w http.ResponseWriter, r *http.Request, st sessions.AgentStore) (routing.Key, bool) {
	sid := r.PathValue("sid")
	if strings.HasPrefix(strings.ToLower(sid), "agent:") { // a key in any case, as routing.Parse reads it
		key, err := routing.Parse(sid)
		if err != nil {
			writeError(w, http.StatusBadRequest, "session key "+sid+": "+userSafe(err))
			return routing.Key{}, false
		}
		if key.Agent != st.AgentID() {
			writeError(w, http.StatusNotFound, "session "+sid+" is not agent "+st.AgentID()+"'s")
			return routing.Key{}, false
		}
		return key, true
	}
	_, key, ok := s.entry(w, r, st)
	return key, ok
}
