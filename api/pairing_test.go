package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gateway/gateway/access"
)

type fakePairing struct{ notifyErr error }

func (fakePairing) List() ([]access.Request, []access.Approval, error) { return nil, nil, nil }

func (f fakePairing) Approve(_ context.Context, channel, code string) (access.Approval, error, error) {
	switch code {
	case "GONE":
		return access.Approval{}, nil, fmt.Errorf("approve: %w", access.ErrCodeExpired)
	case "BROKEN":
		return access.Approval{}, nil, errors.New("pairing state: read telegram.json: input/output error")
	case "ABCD":
		return access.Approval{Channel: channel, AccountID: "default", SenderID: "7"}, f.notifyErr, nil
	}
	return access.Approval{}, nil, fmt.Errorf("approve: %w", access.ErrCodeNotFound)
}

func (fakePairing) Revoke(channel, _, sender string) (bool, error) {
	if channel != "telegram" {
		return false, fmt.Errorf("%w: channel %q: want one of telegram", ErrBadRequest, channel)
	}
	return sender == "7", nil
}

// TestPairingRoutes: the answers of /api/pairing for each outcome.
func TestPairingRoutes(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		notifyErr                error
		code                     int
		want                     string
	}{
		{"list is empty lists", "GET", "/api/pairing", "", nil, 200, `{"approved":[],"pending":[]}`},
		{"approve", "POST", "/api/pairing/telegram/approve", `{"code":"ABCD"}`, nil, 200, `"notified":true`},
		{"approve, not told", "POST", "/api/pairing/telegram/approve", `{"code":"ABCD"}`, errors.New("chat gone"), 200, `"notifyError":"chat gone"`},
		{"unknown code", "POST", "/api/pairing/telegram/approve", `{"code":"NOPE"}`, nil, 404, "no pending code NOPE"},
		{"expired code", "POST", "/api/pairing/telegram/approve", `{"code":"GONE"}`, nil, 410, "expired"},
		{"no code", "POST", "/api/pairing/telegram/approve", `{}`, nil, 400, "code: missing"},
		{"unknown field", "POST", "/api/pairing/telegram/approve", `{"cod":"x"}`, nil, 400, "unknown field"},
		{"revoke", "POST", "/api/pairing/telegram/revoke", `{"accountId":"default","senderId":"7"}`, nil, 200, `"revoked":true`},
		{"revoke, not approved", "POST", "/api/pairing/telegram/revoke", `{"accountId":"default","senderId":"8"}`, nil, 404, "was not approved"},
		// The pairing state failing is no fault of the request (it
		// answered 400); a channel that pairs nothing is.
		{"approve, state failing", "POST", "/api/pairing/telegram/approve", `{"code":"BROKEN"}`, nil, 500, "input/output error"},
		{"revoke, unknown channel", "POST", "/api/pairing/telegramm/revoke", `{"accountId":"default","senderId":"7"}`, nil, 400, "want one of"},
		{"revoke, no sender", "POST", "/api/pairing/telegram/revoke", `{"accountId":"default"}`, nil, 400, "both needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Pairing: fakePairing{notifyErr: tt.notifyErr}})
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:8787"+tt.path, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("%s %s: %d %s, want %d with %s", tt.method, tt.path, rec.Code, rec.Body.String(), tt.code, tt.want)
			}
		})
	}
	rec := httptest.NewRecorder()
	New(Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8787/api/pairing", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without Options.Pairing: %d", rec.Code)
	}
}
