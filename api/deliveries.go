package api

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// DeadLetters is what the dead letter routes act through (the
// dispatcher): list, resubmit once, discard.
type DeadLetters interface {
	DeadLetters(ctx context.Context) ([]sessions.DeadLetter, error)
	Resubmit(ctx context.Context, id string) (sessions.DeadLetter, error)
	Discard(ctx context.Context, id string) error
}

// deliveryRoutes serves the dead letters (`gateway deliveries`):
//
//	GET    /api/deliveries/failed                 -> {letters: [...]} newest first
//	POST   /api/deliveries/failed/{id}/resubmit   -> {letter} (404 gone, 409 already being resubmitted)
//	DELETE /api/deliveries/failed/{id}            -> {discarded: id} (404, 409 as above)
func (s *Server) deliveryRoutes() {
	if s.opts.DeadLetters == nil {
		return
	}
	dl := s.opts.DeadLetters
	s.allow("/api/deliveries/failed", "GET")
	s.allow("/api/deliveries/failed/{id}/resubmit", "POST")
	s.allow("/api/deliveries/failed/{id}", "DELETE")
	s.mux.Handle("GET /api/deliveries/failed", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ls, err := dl.DeadLetters(r.Context())
		if err != nil {
			s.log.Error("listing dead letters failed", zap.Error(err))
			writeError(w, http.StatusInternalServerError, "dead letters unreadable: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"letters": ls})
	})))
	s.mux.Handle("POST /api/deliveries/failed/{id}/resubmit", s.auth(limitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !letterID(w, r) {
			return
		}
		got, err := dl.Resubmit(r.Context(), r.PathValue("id"))
		if err != nil {
			writeLetterError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"resubmitted": got})
	}))))
	s.mux.Handle("DELETE /api/deliveries/failed/{id}", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !letterID(w, r) {
			return
		}
		if err := dl.Discard(r.Context(), r.PathValue("id")); err != nil {
			writeLetterError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"discarded": r.PathValue("id")})
	})))
}

// letterID answers 400 for a path id no letter can have (not UTF-8, or
// with a NUL), the caller's mistake on every backend, and reports whether
// the id may go on.
func letterID(w http.ResponseWriter, r *http.Request) bool {
	if err := sessions.CheckID("dead letter", r.PathValue("id")); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// writeLetterError answers 404 for a letter that is not there, 409 for
// one a resubmit holds, 503 during a shutdown, 500 otherwise.
func writeLetterError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, sessions.ErrNoDeadLetter):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, sessions.ErrDeadLetterClaimed):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, lanes.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting down; try again later")
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}
