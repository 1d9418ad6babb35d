package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/gateway/gateway/internal/webtest"
)

// TestMemoryRoutes: the operator lists, shows, adds, edits and forgets an
// agent's notes over the API, within the agent's limits (the defaults
// here: 500 bytes), with 400 for a bad scope or note, 404 for a note that
// is not there and an agent that is not configured.
func TestMemoryRoutes(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "tok"})
	c := newClient(t, env, "tok")
	alice := "/api/agents/main/memory/sender?scope=" + url.QueryEscape("telegram:42")
	notes := func(path string) []any {
		t.Helper()
		code, body := c.do("GET", path, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %v", path, code, body)
		}
		l, _ := body["notes"].([]any)
		return l
	}
	if code, body := c.do("POST", alice, map[string]string{"text": "prefers tea"}); code != 201 ||
		body["note"].(map[string]any)["id"] != float64(1) {
		t.Fatalf("POST = %d %v", code, body)
	}
	c.do("POST", alice, map[string]string{"text": "lives in Lyon"})
	if code, body := c.do("PATCH", strings.Replace(alice, "sender?", "sender/2?", 1), map[string]string{"text": "lives in Grenoble"}); code != 200 ||
		body["note"].(map[string]any)["text"] != "lives in Grenoble" {
		t.Fatalf("PATCH = %d %v", code, body)
	}
	if l := notes(alice); len(l) != 2 || l[1].(map[string]any)["text"] != "lives in Grenoble" {
		t.Errorf("notes = %v", l)
	}
	code, body := c.do("GET", "/api/agents/main/memory", nil)
	scopes, _ := body["scopes"].([]any)
	if code != 200 || len(scopes) != 1 || scopes[0].(map[string]any)["notes"] != float64(2) {
		t.Errorf("GET memory = %d %v", code, body)
	}
	for _, c2 := range []struct {
		method, path string
		body         any
		code         int
		says         string
	}{
		{"POST", alice, map[string]string{"text": strings.Repeat("x", 501)}, 400, "at most 500 bytes"},
		{"POST", alice, map[string]string{"text": "  "}, 400, "empty note"},
		{"POST", alice, map[string]string{"txt": "x"}, 400, "unknown field"},
		{"POST", "/api/agents/main/memory/people?scope=x", map[string]string{"text": "x"}, 400, "unknown scope kind"},
		{"GET", "/api/agents/main/memory/sender", nil, 400, "needs an id"},
		{"GET", "/api/agents/main/memory/agent?scope=x", nil, 400, "takes no id"},
		{"PATCH", strings.Replace(alice, "sender?", "sender/9?", 1), map[string]string{"text": "x"}, 404, "no such note"},
		{"DELETE", strings.Replace(alice, "sender?", "sender/x?", 1), nil, 400, "want a note number"},
		{"GET", "/api/agents/ghost/memory", nil, 404, "agent ghost not found"},
	} {
		code, body := c.do(c2.method, c2.path, c2.body)
		if msg, _ := body["error"].(string); code != c2.code || !strings.Contains(msg, c2.says) {
			t.Errorf("%s %s = %d %v; want %d saying %q", c2.method, c2.path, code, body, c2.code, c2.says)
		}
	}
	if code, _ := c.do("DELETE", strings.Replace(alice, "sender?", "sender/1?", 1), nil); code != 200 {
		t.Errorf("DELETE note 1 = %d", code)
	}
	if code, _ := c.do("DELETE", strings.Replace(alice, "sender?", "sender/1?", 1), nil); code != 404 {
		t.Errorf("DELETE note 1 again = %d, want 404", code)
	}
	if code, body := c.do("DELETE", alice, nil); code != 200 || body["forgotten"] != float64(1) {
		t.Errorf("DELETE scope = %d %v", code, body)
	}
	if l := notes(alice); len(l) != 0 {
		t.Errorf("notes after forgetting the scope = %v", l)
	}
	// The token is wanted.
	if code, _ := newClient(t, env, "").do("GET", "/api/agents/main/memory", nil); code != 401 {
		t.Errorf("GET without the token = %d, want 401", code)
	}
}
