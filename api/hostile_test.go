package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gateway/gateway/internal/webtest"
)

// TestEveryRouteNeedsTheToken: with a token configured, every operator
// route, the chat's resume stream and the catch-all answer 401 (JSON, with
// WWW-Authenticate) without it; only the probes and the page are open.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "s3cret"})
	anon := newClient(t, env, "")
	turn := "/api/agents/main/chat/turns/00000000-0000-4000-8000-000000000000.00000000-0000-4000-8000-000000000001"
	sum := strings.Repeat("a", 64)
	routes := []struct{ method, path, body string }{
		{"GET", turn, ""},
		{"GET", "/api/agents/main/memory", ""},
		{"GET", "/api/agents/main/memory/agent", ""},
		{"POST", "/api/agents/main/memory/agent", `{"text":"x"}`},
		{"PATCH", "/api/agents/main/memory/agent/1", `{"text":"x"}`},
		{"DELETE", "/api/agents/main/memory/agent/1", ""},
		{"DELETE", "/api/agents/main/memory/agent", ""},
		{"GET", "/api/search?q=x", ""},
		{"GET", "/api/usage", ""},
		{"GET", "/api/status", ""},
		{"GET", "/api/logs", ""},
		{"GET", "/api/config", ""},
		{"GET", "/api/mcp/servers", ""},
		{"GET", "/api/jobs", ""},
		{"POST", "/api/jobs", `{"session":"x","when":"x"}`},
		{"DELETE", "/api/jobs/x", ""},
		{"GET", "/api/deliveries/failed", ""},
		{"POST", "/api/deliveries/failed/x/resubmit", ""},
		{"DELETE", "/api/deliveries/failed/x", ""},
		{"GET", "/api/pairing", ""},
		{"POST", "/api/pairing/telegram/approve", `{"code":"x"}`},
		{"POST", "/api/pairing/telegram/revoke", `{"id":"x"}`},
		{"GET", "/api/media/" + sum, ""},
		{"POST", "/api/agents/main/sessions/x/messages", `{"text":"x"}`},
		{"GET", "/api/agents/nope/sessions", ""},
		{"GET", "/api/agents/main/sessions/x/reset", ""},
	}
	for _, r := range routes {
		var body any
		if r.body != "" {
			body = r.body
		}
		res := anon.raw(r.method, r.path, body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without token: %d, want 401", r.method, r.path, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: Content-Type %q, want JSON", r.method, r.path, ct)
		}
	}
}

// TestMemoryBadScopeAndNoteOneAnswer: a note route whose scope and note
// number are both bad answers one 400 with one JSON error (it wrote two
// bodies, the second after the status was sent).
func TestMemoryBadScopeAndNoteOneAnswer(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	for _, m := range []string{"PATCH", "DELETE"} {
		var body any
		if m == "PATCH" {
			body = `{"text":"x"}`
		}
		code, out := c.do(m, "/api/agents/main/memory/bogus/abc", body)
		if code != http.StatusBadRequest || out["error"] == nil {
			t.Errorf("%s bad scope and note: %d %v, want 400 with an error", m, code, out)
		}
	}
}

// TestChatAgentIDCaseInsensitive: the API matches agent ids whatever their
// case, so a chat posted to /api/agents/MAIN is the agent main's turn: its
// reply can be fetched at /api/agents/main/chat/turns/{turn} (it was a 404:
// the turn was kept under "MAIN").
func TestChatAgentIDCaseInsensitive(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	res := c.raw("POST", "/api/agents/MAIN/chat", map[string]string{"message": "hello"})
	turn := res.Header.Get("X-Turn-Id")
	_, _ = io.Copy(io.Discard, res.Body) // to the done event
	res.Body.Close()
	if res.StatusCode != http.StatusOK || turn == "" {
		t.Fatalf("chat to MAIN: %d, turn %q", res.StatusCode, turn)
	}
	code, out := c.do("GET", "/api/agents/main/chat/turns/"+turn, nil)
	if code != http.StatusOK || out["status"] != "answered" {
		t.Errorf("turn of a chat to MAIN read at main: %d %v, want 200 answered", code, out)
	}
}

// TestConfiguredOriginMatchesAsBrowsersSendIt: http.allowedOrigins written
// with capitals or a trailing slash (config validation accepts both) admits
// the origin a browser sends, which is lower-case and has no path (it was
// refused with 403, and the listed page could not use the API); another
// origin stays refused.
func TestConfiguredOriginMatchesAsBrowsersSendIt(t *testing.T) {
	env := webtest.Start(t, webtest.Config{AllowedOrigins: []string{"https://Ops.Example.com/"}})
	for origin, want := range map[string]int{
		"https://ops.example.com":      http.StatusOK,
		"https://ops.example.com.evil": http.StatusForbidden,
		"http://ops.example.com":       http.StatusForbidden,
	} {
		code, body := send(t, env, "GET", "/api/agents/main/sessions", map[string]string{"Origin": origin}, "")
		if code != want {
			t.Errorf("Origin %s: %d %s, want %d", origin, code, body, want)
		}
	}
}

// TestWrongMethodIs405: a route that exists answers another method with a
// JSON 405 and its Allow header, not the catch-all's 404 "no such route".
func TestWrongMethodIs405(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	turn := "/api/agents/main/chat/turns/00000000-0000-4000-8000-000000000000.00000000-0000-4000-8000-000000000001"
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", turn, "GET"},
		{"PUT", "/api/agents/main/memory", "GET"},
		{"PUT", "/api/agents/main/memory/agent", "GET, POST, DELETE"},
		{"GET", "/api/agents/main/memory/agent/1", "PATCH, DELETE"},
		{"POST", "/api/status", "GET"},
		{"POST", "/api/mcp/servers", "GET"},
		{"PUT", "/api/jobs", "GET, POST"},
		{"GET", "/api/jobs/x", "DELETE"},
	} {
		res := c.raw(tc.method, tc.path, nil)
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tc.method, tc.path, res.StatusCode, res.Header.Get("Allow"), tc.allow)
		}
	}
}

// TestChatEmptyBodySaysSo: a chat request without a body is a 400 that says
// the body is empty, as the other routes say (it was "bad JSON: EOF").
func TestChatEmptyBodySaysSo(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	code, body := send(t, env, "POST", "/api/agents/main/chat", nil, "")
	if code != http.StatusBadRequest || !strings.Contains(body, `"bad JSON: empty body"`) {
		t.Errorf("empty chat body: %d %s, want 400 bad JSON: empty body", code, body)
	}
}
