package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
	"github.com/gateway/gateway/agents/mcp/mcptest"
)

// The configured headers (an Authorization token read from headerFiles)
// go only to the configured server's host: a server that redirects the
// client elsewhere (a moved endpoint, an open redirect) does not get them
// sent on. net/http drops such headers on a redirect to another host, but
// the headers were added to every request the client made, the
// redirected ones included.
func TestHeadersNotSentToRedirectTarget(t *testing.T) {
	var leaked atomic.Value
	other := mcptest.NewHTTPServer(t) // serves MCP without auth
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			leaked.Store(a)
		}
		r2 := r.Clone(r.Context())
		r2.RequestURI, r2.URL.Host, r2.URL.Scheme = "", other.Listener.Addr().String(), "http"
		resp, err := http.DefaultTransport.RoundTrip(r2)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			_, _ = w.Write(buf[:n])
			w.(http.Flusher).Flush()
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(elsewhere.Close)
	// moved redirects every request to another host (127.0.0.1 and localhost).
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1) + r.URL.Path
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(moved.Close)
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{"moved": {URL: moved.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer s3cret"}, ConnectTimeout: 10 * time.Second}}})
	run(t, m)
	m.Tools(context.Background(), nil)
	if a, _ := leaked.Load().(string); a != "" {
		t.Fatalf("the redirect target got Authorization %q", a)
	}
}
