package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gateway/gateway/internal/webtest"
)

// BenchmarkListSessions measures GET /api/agents/main/sessions over 50
// sessions, served in-process (no network).
func BenchmarkListSessions(b *testing.B) {
	env := webtest.Start(b, webtest.Config{})
	c := newClient(b, env, "")
	for range 50 {
		c.chat("main", "hello", "")
	}
	req := httptest.NewRequest(http.MethodGet, "/api/agents/main/sessions", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		env.Server.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		_, _ = io.Copy(io.Discard, w.Body)
	}
}
