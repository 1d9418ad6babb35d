package api

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
)

// Pairing is what the pairing routes act through (gatewayd over the
// daemon's access.PairingStore and channel adapters).
type Pairing interface {
	// List returns the pending requests and the approved senders of every
	// channel.
	List() (pending []access.Request, approved []access.Approval, err error)
	// Approve admits the sender given code on channel and tells them in
	// their chat; notifyErr says why they could not be told (the approval
	// stands).
	Approve(ctx context.Context, channel, code string) (a access.Approval, notifyErr error, err error)
	// Revoke withdraws an approved sender; false: they were not approved.
	Revoke(channel, accountID, senderID string) (bool, error)
}

// pairingRoutes serves the pairing requests of unknown DM senders
// (`gateway pairing`):
//
//	GET  /api/pairing                    -> {pending: [...], approved: [...]}
//	POST /api/pairing/{channel}/approve  {code}                -> {approved, notified, notifyError?}
//	POST /api/pairing/{channel}/revoke   {accountId, senderId} -> {revoked: true}
//
// An unknown code is 404, an expired one 410, a sender not approved 404, a
// channel that pairs nothing 400 (ErrBadRequest); the pairing state
// failing is 500.
func (s *Server) pairingRoutes() {
	if s.opts.Pairing == nil {
		return
	}
	p := s.opts.Pairing
	s.allow("/api/pairing", "GET")
	s.allow("/api/pairing/{channel}/approve", "POST")
	s.allow("/api/pairing/{channel}/revoke", "POST")
	s.mux.Handle("GET /api/pairing", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pending, approved, err := p.List()
		if err != nil {
			writeError(w, http.StatusInternalServerError, "pairing state unreadable: "+err.Error())
			return
		}
		if pending == nil {
			pending = []access.Request{}
		}
		if approved == nil {
			approved = []access.Approval{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"pending": pending, "approved": approved})
	})))
	s.mux.Handle("POST /api/pairing/{channel}/approve", s.auth(limitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Code string `json:"code"`
		}
		if !decodeJSON(w, r, &body, false) {
			return
		}
		if body.Code == "" {
			writeError(w, http.StatusBadRequest, "code: missing")
			return
		}
		a, notifyErr, err := p.Approve(r.Context(), r.PathValue("channel"), body.Code)
		switch {
		case errors.Is(err, access.ErrCodeNotFound):
			writeError(w, http.StatusNotFound, "no pending code "+body.Code+" on "+r.PathValue("channel"))
			return
		case errors.Is(err, access.ErrCodeExpired):
			writeError(w, http.StatusGone, "code "+body.Code+" expired; ask the sender to write again for a new one")
			return
		case err != nil:
			s.pairingError(w, "approve", err)
			return
		}
		out := map[string]any{"approved": a, "notified": notifyErr == nil}
		if notifyErr != nil {
			out["notifyError"] = notifyErr.Error()
		}
		writeJSON(w, http.StatusOK, out)
	}))))
	s.mux.Handle("POST /api/pairing/{channel}/revoke", s.auth(limitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AccountID string `json:"accountId"`
			SenderID  string `json:"senderId"`
		}
		if !decodeJSON(w, r, &body, false) {
			return
		}
		if body.AccountID == "" || body.SenderID == "" {
			writeError(w, http.StatusBadRequest, "accountId and senderId: both needed")
			return
		}
		ok, err := p.Revoke(r.PathValue("channel"), body.AccountID, body.SenderID)
		if err != nil {
			s.pairingError(w, "revoke", err)
			return
		}
		if !ok {
			writeError(w, http.StatusNotFound, r.PathValue("channel")+" sender "+body.SenderID+" on account "+body.AccountID+" was not approved")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"revoked": true})
	}))))
}

// pairingError answers a pairing failure: 400 for the caller's mistake
// (ErrBadRequest), else 500 (logged): the pairing state is unreadable or
// not writable, which no change of the request mends.
func (s *Server) pairingError(w http.ResponseWriter, op string, err error) {
	if errors.Is(err, ErrBadRequest) {
		writeError(w, http.StatusBadRequest, userSafe(err))
		return
	}
	s.log.Error("pairing "+op+" failed", zap.Error(err))
	writeError(w, http.StatusInternalServerError, "pairing "+op+" failed: "+userSafe(err))
}
