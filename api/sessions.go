package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Limits of PATCH fields.
const (
	maxTitle = 200 // runes
	maxLabel = 100 // runes
)

// SessionView is one session as the API shows it (list rows, history
// header, mutation answers).
type SessionView struct {
	SessionID     string    `json:"sessionId"`
	SessionKey    string    `json:"sessionKey"`
	Title         string    `json:"title,omitempty"`
	Label         string    `json:"label,omitempty"`
	Channel       string    `json:"channel,omitempty"`
	ChatType      string    `json:"chatType,omitempty"`
	Model         string    `json:"model,omitempty"`
	ModelOverride string    `json:"modelOverride,omitempty"`
	QueueMode     string    `json:"queueMode,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	MessageCount  int       `json:"messageCount"`
	TotalTokens   int64     `json:"totalTokens"`
	ContextTokens int64     `json:"contextTokens"`
	Compactions   int       `json:"compactionCount"`

	// ThinkingLevel and GroupActivation are the chat's /think and
	// /activation settings.
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	GroupActivation string `json:"groupActivation,omitempty"`
	// DeliveryContext is where the session's latest reply was delivered
	// (channel, accountId, to, threadId); absent before its first.
	DeliveryContext sessions.DeliveryContext `json:"deliveryContext,omitzero"`
}

// ViewOf returns the API view of an entry.
func ViewOf(e sessions.Entry) SessionView {
	model := e.ModelFor()
	if model == "" {
		model = e.Model
	}
	return SessionView{SessionID: e.SessionID, SessionKey: e.SessionKey, Title: e.Title, Label: e.Label,
		Channel: e.Channel, ChatType: e.ChatType, Model: model, ModelOverride: e.ModelOverride,
		ThinkingLevel: e.ThinkingLevel, GroupActivation: e.GroupActivation, DeliveryContext: e.DeliveryContext,
		QueueMode: e.QueueMode, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, MessageCount: e.MessageCount,
		TotalTokens: e.TotalTokens, ContextTokens: e.ContextTokens, Compactions: e.CompactionCount}
}

// PatchRequest is the body of PATCH /api/agents/{id}/sessions/{sid}.
// Absent fields are left alone; "" clears label, model and queueMode.
type PatchRequest struct {
	Title     *string `json:"title,omitempty"`
	Label     *string `json:"label,omitempty"`
	Model     *string `json:"model,omitempty"`
	QueueMode *string `json:"queueMode,omitempty"`
}

// CompactRequest is the optional body of POST .../compact.
type CompactRequest struct {
	Instructions string `json:"instructions,omitempty"`
}

func (s *Server) routes() {
	const list = "/api/agents/{id}/sessions"
	const one = list + "/{sid}"
	s.mux.Handle("GET /api/agents", s.auth(http.HandlerFunc(s.listAgents)))
	s.allow("/api/agents", "GET")
	s.handle("GET "+list, s.listSessions)
	s.handle("GET "+one, s.getSession)
	s.handle("PATCH "+one, s.patchSession)
	s.handle("DELETE "+one, s.deleteSession)
	s.handle("POST "+one+"/reset", s.resetSession)
	s.handle("POST "+one+"/compact", s.compactSession)
	s.allow(list, "GET")
	s.allow(one, "GET", "PATCH", "DELETE")
	s.allow(one+"/reset", "POST")
	s.allow(one+"/compact", "POST")
	s.allow("/api/agents/{id}/chat", "POST")
	s.searchRoutes()
	s.sendRoutes()
}

// listAgents answers the configured agent ids (the page's agent picker).
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	ids := s.opts.Agents
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": ids})
}

func (s *Server) store(w http.ResponseWriter, r *http.Request) (sessions.AgentStore, bool) {
	st, err := s.opts.Sessions.Store(strings.ToLower(r.PathValue("id")))
	if err != nil {
		s.log.Error("session store unavailable", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "session store unavailable")
		return nil, false
	}
	return st, true
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	st, ok := s.store(w, r)
	if !ok {
		return
	}
	var (
		list []sessions.Entry
		err  error
	)
	for name := range r.URL.Query() {
		if name != "limit" {
			// A misspelt limit (?limt=5) would list every session.
			writeError(w, http.StatusBadRequest, "unknown parameter "+strconv.Quote(name)+"; use limit")
			return
		}
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "limit: want a number from 1 to 10000")
			return
		}
		list, err = st.Recent(n) // the n most recent without copying the whole index
	} else {
		list, err = st.List()
	}
	if err != nil {
		s.log.Error("list sessions failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "could not list sessions")
		return
	}
	out := make([]SessionView, 0, len(list))
	for _, e := range list {
		out = append(out, ViewOf(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// entry finds the session named by {sid}, answering 404 itself.
func (s *Server) entry(w http.ResponseWriter, r *http.Request, st sessions.AgentStore) (sessions.Entry, routing.Key, bool) {
	sid := r.PathValue("sid")
	e, ok, err := st.GetByID(sid)
	if err != nil && !errors.Is(err, sessions.ErrNotFound) {
		s.log.Error("session lookup failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "session lookup failed")
		return sessions.Entry{}, routing.Key{}, false
	}
	if !ok {
		writeError(w, http.StatusNotFound, "session "+sid+" not found")
		return sessions.Entry{}, routing.Key{}, false
	}
	key, err := routing.Parse(e.SessionKey)
	if err != nil {
		s.log.Error("session key in the index is invalid", zap.String("session_id", sid), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "session key is invalid")
		return sessions.Entry{}, routing.Key{}, false
	}
	return e, key, true
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	st, ok := s.store(w, r)
	if !ok {
		return
	}
	e, key, ok := s.entry(w, r, st)
	if !ok {
		return
	}
	t, err := st.TranscriptOf(e)
	if err != nil {
		s.log.Error("open transcript failed", zap.String("session_id", e.SessionID), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "transcript unavailable")
		return
	}
	msgs, err := t.History(r.Context())
	if err != nil {
		s.log.Error("read history failed", zap.String("session_id", e.SessionID), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "could not read history")
		return
	}
	if msgs == nil {
		msgs = []sessions.Message{}
	}
	qs := questionsOf(s.opts.Choices, key, msgs)
	if qs == nil {
		qs = []question{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": ViewOf(e), "messages": msgs, "questions": qs})
}

// validate checks p and returns a user-facing error naming the field.
func (s *Server) validate(p PatchRequest) error {
	if p.Title == nil && p.Label == nil && p.Model == nil && p.QueueMode == nil {
		return errors.New("nothing to change: give title, label, model or queueMode")
	}
	if p.Title != nil {
		t := strings.TrimSpace(*p.Title)
		if t == "" {
			return errors.New("title: must not be empty")
		}
		if utf8.RuneCountInString(t) > maxTitle {
			return fmt.Errorf("title: longer than %d characters", maxTitle)
		}
		if strings.ContainsAny(t, "\n\r\x00") {
			return errors.New("title: must be one line")
		}
	}
	if p.Label != nil && utf8.RuneCountInString(*p.Label) > maxLabel {
		return fmt.Errorf("label: longer than %d characters", maxLabel)
	}
	if p.Label != nil && strings.ContainsRune(*p.Label, 0) {
		return errors.New("label: must not contain NUL bytes") // no backend's text holds them alike
	}
	if p.Label != nil && strings.ContainsAny(strings.TrimSpace(*p.Label), "\n\r") {
		return errors.New("label: must be one line")
	}
	if p.Model != nil && *p.Model != "" {
		prov, model, ok := strings.Cut(*p.Model, "/")
		if !ok || prov == "" || model == "" || strings.ContainsAny(*p.Model, " \n\t") {
			return fmt.Errorf("model: %q is not provider/model", *p.Model)
		}
		if len(s.opts.Providers) > 0 && !contains(s.opts.Providers, prov) {
			return fmt.Errorf("model: provider %q is not configured", prov)
		}
	}
	if p.QueueMode != nil {
		if _, ok := lanes.ParseMode(*p.QueueMode); !ok && *p.QueueMode != "" {
			return fmt.Errorf("queueMode: %q is not collect, followup, steer, interrupt, steer-backlog, queue or \"\"", *p.QueueMode)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	var p PatchRequest
	if !decodeJSON(w, r, &p, false) {
		return
	}
	if err := s.validate(p); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if p.Model != nil && *p.Model != "" && s.opts.Runner != nil {
		agentID := strings.ToLower(r.PathValue("id"))
		name, ok := s.opts.Runner.OfferedModel(agentID, *p.Model)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("model: %q is not offered to this agent (choices: %s)",
				*p.Model, strings.Join(s.opts.Runner.Models(agentID), ", ")))
			return
		}
		*p.Model = name
	}
	s.mutate(w, r, "patch", func(ctx context.Context, st sessions.AgentStore, key routing.Key, sid string) (any, error) {
		e, err := st.Patch(ctx, key, func(e *sessions.Entry) error {
			if e.SessionID != sid {
				return sessions.ErrNotFound
			}
			if p.Title != nil {
				e.Title = strings.TrimSpace(*p.Title)
			}
			if p.Label != nil {
				e.Label = strings.TrimSpace(*p.Label)
			}
			if p.Model != nil {
				e.ModelOverride = *p.Model
			}
			if p.QueueMode != nil {
				e.QueueMode = *p.QueueMode
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"session": ViewOf(e)}, nil
	})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	s.mutate(w, r, "delete", func(ctx context.Context, st sessions.AgentStore, key routing.Key, sid string) (any, error) {
		if err := current(st, key, sid); err != nil {
			return nil, err
		}
		if err := st.Delete(ctx, key); err != nil {
			return nil, err
		}
		s.ended(ctx, key)
		return map[string]any{"sessionId": sid, "archived": true}, nil
	})
}

func (s *Server) resetSession(w http.ResponseWriter, r *http.Request) {
	s.mutate(w, r, "reset", func(ctx context.Context, st sessions.AgentStore, key routing.Key, sid string) (any, error) {
		if err := current(st, key, sid); err != nil {
			return nil, err
		}
		e, err := st.Reset(ctx, key, sessions.ResetOptions{Manual: true, Reason: "api"})
		if err != nil {
			return nil, err
		}
		s.ended(ctx, key)
		return map[string]any{"previousSessionId": sid, "session": ViewOf(e)}, nil
	})
}

func (s *Server) compactSession(w http.ResponseWriter, r *http.Request) {
	var req CompactRequest
	if !decodeJSON(w, r, &req, true) {
		return
	}
	if s.opts.Runner == nil {
		writeError(w, http.StatusServiceUnavailable, "compaction is not available in this process")
		return
	}
	agent := strings.ToLower(r.PathValue("id"))
	s.mutate(w, r, "compact", func(ctx context.Context, st sessions.AgentStore, key routing.Key, sid string) (any, error) {
		if err := current(st, key, sid); err != nil {
			return nil, err
		}
		if err := s.opts.Runner.Compact(ctx, agent, key, req.Instructions); err != nil {
			return nil, err
		}
		e, _, err := st.Get(key)
		if err != nil {
			return nil, err
		}
		return map[string]any{"session": ViewOf(e)}, nil
	})
}

// ended tells the daemon that key's session ended (Options.Ended).
func (s *Server) ended(ctx context.Context, key routing.Key) {
	if s.opts.Ended != nil {
		s.opts.Ended(ctx, key)
	}
}

// current checks that sid is still key's session (a turn may have rolled it
// over while the request waited for the lane).
func current(st sessions.AgentStore, key routing.Key, sid string) error {
	e, ok, err := st.Get(key)
	if err != nil {
		return err
	}
	if !ok || e.SessionID != sid {
		return sessions.ErrNotFound
	}
	return nil
}

// mutate looks up {sid} and runs fn on the session's lane, answering with
// fn's result or a JSON error.
func (s *Server) mutate(w http.ResponseWriter, r *http.Request, op string,
	fn func(ctx context.Context, st sessions.AgentStore, key routing.Key, sid string) (any, error)) {
	st, ok := s.store(w, r)
	if !ok {
		return
	}
	e, key, ok := s.entry(w, r, st)
	if !ok {
		return
	}
	var out any
	run := func(ctx context.Context) error {
		var err error
		out, err = fn(ctx, st, key, e.SessionID)
		return err
	}
	var err error
	if s.opts.Serialise != nil {
		err = s.opts.Serialise(r.Context(), key, run)
	} else {
		err = run(r.Context())
	}
	log := s.log.With(zap.String("op", op), zap.String("session_key", key.String()), zap.String("session_id", e.SessionID))
	switch {
	case err == nil:
		log.Info("session changed by operator")
		writeJSON(w, http.StatusOK, out)
	case errors.Is(err, agents.ErrNothingToCompact):
		writeError(w, http.StatusConflict, "nothing to compact: the session has no history before its last user message")
	case errors.Is(err, sessions.ErrNotFound):
		writeError(w, http.StatusNotFound, "session "+e.SessionID+" not found (it may have just been reset)")
	case errors.Is(err, lanes.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting down; try again later")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if r.Context().Err() == nil {
			log.Warn("session change timed out", zap.Error(err))
		}
		writeError(w, http.StatusServiceUnavailable, op+" did not finish; try again")
	default:
		log.Error("session change failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, op+" failed: "+userSafe(err))
	}
}

// userSafe shortens an internal error for an API answer: the first line,
// at most 200 bytes, cut between characters (no bodies or secrets are in our errors, but a
// provider's error text can be long).
func userSafe(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut-- // between characters
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
