package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
)

// TestChatWhileStartingOrShuttingDownSaysSo: a chat that comes before the
// adapter takes messages or after it stopped (the daemon's shutdown grace,
// when the HTTP server still answers) is a 503 that says which, with
// Retry-After: it was not taken, and the page sends it again (it was a
// bare "not ready" both times, which the page gave up on).
func TestChatWhileStartingOrShuttingDownSaysSo(t *testing.T) {
	a := New(Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", a.ServeChat)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func() (int, string, string) {
		t.Helper()
		res, err := http.Post(srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(`{"message":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Retry-After"), string(b)
	}
	if code, retry, body := post(); code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "starting") {
		t.Errorf("before Run: %d Retry-After %q %s, want 503 starting with Retry-After", code, retry, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx, func(context.Context, channels.Inbound) error { return nil })
	}()
	<-a.Accepting()
	cancel()
	<-done
	if code, retry, body := post(); code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "shutting down") {
		t.Errorf("after Run: %d Retry-After %q %s, want 503 shutting down with Retry-After", code, retry, body)
	}
}
