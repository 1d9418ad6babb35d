package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConfigRoute: GET /api/config needs the token, answers what
// Options.Config returns, 404 without one, 405 for other methods.
func TestConfigRoute(t *testing.T) {
	do := func(s *Server, method, auth string) (int, string) {
		req := httptest.NewRequest(method, "http://127.0.0.1:8787/api/config", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	s := New(Options{Token: "tok", Config: func() any { return map[string]any{"http": map[string]string{"token": "REDACTED"}} }})
	if code, _ := do(s, http.MethodGet, ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if code, body := do(s, http.MethodGet, "tok"); code != http.StatusOK || !strings.Contains(body, `{"config":{"http":{"token":"REDACTED"}}}`) {
		t.Errorf("GET: %d %s", code, body)
	}
	if code, _ := do(s, http.MethodPost, "tok"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", code)
	}
	if code, _ := do(New(Options{}), http.MethodGet, ""); code != http.StatusNotFound {
		t.Errorf("without Options.Config: %d", code)
	}
}
