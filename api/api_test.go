package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sse "github.com/tmaxmax/go-sse"
	"go.uber.org/goleak"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/internal/webtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http's keep-alive connections of http.DefaultClient.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// client calls one Env with an optional token.
type client struct {
	t     testing.TB
	base  string
	token string
}

func newClient(t testing.TB, env *webtest.Env, token string) *client {
	return &client{t: t, base: env.URL, token: token}
}

// do sends body (a string is sent as is, anything else as JSON) and returns
// the status and decoded JSON answer (nil if none).
func (c *client) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	res := c.raw(method, path, body)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if len(bytes.TrimSpace(data)) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &out); err != nil {
			c.t.Fatalf("%s %s: answer is not JSON: %v: %q", method, path, err, data)
		}
	}
	return res.StatusCode, out
}

func (c *client) raw(method, path string, body any) *http.Response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// chatResult is what one SSE chat stream said.
type chatResult struct {
	Text          string
	Errors        []string
	SessionID     string
	TokenEstimate int64
	Events        []string
	Choices       []string // the data of each choices event
}

// chat posts a message and parses the event stream with a real SSE client.
func (c *client) chat(agent, message, sessionID string) chatResult {
	c.t.Helper()
	body := map[string]string{"message": message}
	if sessionID != "" {
		body["sessionId"] = sessionID
	}
	res := c.raw("POST", "/api/agents/"+agent+"/chat", body)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(res.Body)
		c.t.Fatalf("chat: status %d: %s", res.StatusCode, data)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.t.Fatalf("chat: Content-Type %q, want text/event-stream", ct)
	}
	var out chatResult
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			c.t.Fatalf("chat: reading the event stream: %v", err)
		}
		out.Events = append(out.Events, ev.Type)
		switch ev.Type {
		case "choices":
			out.Choices = append(out.Choices, ev.Data)
		case "delta":
			var d struct{ Text string }
			mustJSON(c.t, ev.Data, &d)
			out.Text += d.Text
		case "error":
			var d struct{ Message string }
			mustJSON(c.t, ev.Data, &d)
			out.Errors = append(out.Errors, d.Message)
		case "done":
			var d struct {
				SessionID     string `json:"sessionId"`
				TokenEstimate int64  `json:"tokenEstimate"`
			}
			mustJSON(c.t, ev.Data, &d)
			out.SessionID, out.TokenEstimate = d.SessionID, d.TokenEstimate
		}
	}
	if len(out.Events) == 0 || out.Events[len(out.Events)-1] != "done" {
		c.t.Fatalf("chat: events %v, want the stream to end with done", out.Events)
	}
	return out
}

func mustJSON(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("event data %q: %v", s, err)
	}
}

func TestChatStreamsReplyAndCreatesSession(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	r := c.chat("main", "hello there, this is a rather long first message", "")
	if r.Text != "echo: hello there, this is a rather long first message" {
		t.Errorf("reply %q", r.Text)
	}
	if len(r.Errors) > 0 {
		t.Errorf("errors: %v", r.Errors)
	}
	if r.SessionID == "" || r.TokenEstimate <= 0 {
		t.Errorf("done = %+v, want a session id and a positive token estimate", r)
	}
	if len(r.Events) < 2 || r.Events[0] != "turn" || r.Events[1] != "delta" {
		t.Errorf("events %v, want the turn event, then deltas", r.Events)
	}

	code, list := c.do("GET", "/api/agents/main/sessions", nil)
	if code != 200 {
		t.Fatalf("list: %d", code)
	}
	rows := list["sessions"].([]any)
	if len(rows) != 1 {
		t.Fatalf("list: %v", list)
	}
	row := rows[0].(map[string]any)
	if row["sessionId"] != r.SessionID || row["title"] != "hello there, this is a rather" || row["channel"] != "web" {
		t.Errorf("row %v: want the session, its 30-character title and channel web", row)
	}

	// Continuing by session id stays in the same session.
	r2 := c.chat("main", "second", r.SessionID)
	if r2.SessionID != r.SessionID || r2.Text != "echo: second" {
		t.Errorf("second turn %+v, want the same session", r2)
	}
	code, hist := c.do("GET", "/api/agents/main/sessions/"+r.SessionID, nil)
	if code != 200 {
		t.Fatalf("history: %d %v", code, hist)
	}
	var got [][2]string
	for _, m := range hist["messages"].([]any) {
		mm := m.(map[string]any)
		text := ""
		for _, c := range mm["content"].([]any) {
			text += c.(map[string]any)["text"].(string)
		}
		got = append(got, [2]string{mm["role"].(string), text})
	}
	want := [][2]string{
		{"user", "hello there, this is a rather long first message"},
		{"assistant", "echo: hello there, this is a rather long first message"},
		{"user", "second"}, {"assistant", "echo: second"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if hist["session"].(map[string]any)["sessionId"] != r.SessionID {
		t.Errorf("history header %v", hist["session"])
	}
}

func TestChatRefusals(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	tests := []struct {
		name string
		path string
		body any
		want int
	}{
		{"bad JSON", "/api/agents/main/chat", `{"message":`, 400},
		{"unknown field", "/api/agents/main/chat", `{"message":"x","bogus":1}`, 400},
		{"empty message", "/api/agents/main/chat", `{"message":"  "}`, 400},
		{"unknown session", "/api/agents/main/chat", `{"message":"x","sessionId":"00000000-0000-0000-0000-000000000000"}`, 404},
		{"unknown agent", "/api/agents/nobody/chat", `{"message":"x"}`, 404},
		{"oversized", "/api/agents/main/chat", `{"message":"` + strings.Repeat("a", api.MaxBody) + `"}`, 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			code, body := c.do("POST", tc.path, tc.body)
			if code != tc.want {
				t.Errorf("status %d, want %d (%v)", code, tc.want, body)
			}
			if body["error"] == nil || body["error"] == "" {
				t.Errorf("answer %v, want a JSON error", body)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "s3cret"})
	anon := newClient(t, env, "")
	wrong := newClient(t, env, "nope")
	good := newClient(t, env, "s3cret")
	sid := good.chat("main", "hi", "").SessionID
	one := "/api/agents/main/sessions/" + sid
	routes := []struct{ method, path, body string }{
		{"POST", "/api/agents/main/chat", `{"message":"x"}`},
		{"GET", "/api/agents", ""},
		{"GET", "/api/agents/main/sessions", ""},
		{"GET", one, ""},
		{"PATCH", one, `{"title":"x"}`},
		{"DELETE", one, ""},
		{"POST", one + "/reset", ""},
		{"POST", one + "/compact", ""},
		{"GET", "/metrics", ""},
		{"GET", "/api/nothing-here", ""},
		{"PUT", one, ""},
	}
	for _, r := range routes {
		for _, cl := range []*client{anon, wrong} {
			cl.t = t
			var body any
			if r.body != "" {
				body = r.body
			}
			res := cl.raw(r.method, r.path, body)
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d, want 401", r.method, r.path, cl.token, res.StatusCode)
			}
			if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: no WWW-Authenticate: Bearer", r.method, r.path)
			}
		}
	}
	// Probes and the page need no token.
	for _, p := range []string{"/healthz", "/readyz", "/", "/app.js"} {
		if code, _ := anon.do("GET", p, nil); code != 200 {
			t.Errorf("GET %s without token: %d, want 200", p, code)
		}
	}
	// The session survived all refused mutations.
	if code, _ := good.do("GET", one, nil); code != 200 {
		t.Errorf("session gone after refused requests: %d", code)
	}
	if code, _ := good.do("GET", "/metrics", nil); code != 200 {
		t.Errorf("metrics with token: %d", code)
	}
}

func TestPatch(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	sid := c.chat("main", "hi", "").SessionID
	one := "/api/agents/main/sessions/" + sid

	code, body := c.do("PATCH", one, map[string]string{"title": "  Renamed  ", "label": "ops", "model": "LOCAL/Echo", "queueMode": "steer"})
	if code != 200 {
		t.Fatalf("patch: %d %v", code, body)
	}
	s := body["session"].(map[string]any)
	got := [4]any{s["title"], s["label"], s["modelOverride"], s["queueMode"]}
	if want := [4]any{"Renamed", "ops", "local/echo", "steer"}; got != want { // the model as configured
		t.Errorf("patched %v, want %v", got, want)
	}
	// Absent fields stay; "" clears.
	code, body = c.do("PATCH", one, map[string]string{"queueMode": "", "model": ""})
	if code != 200 {
		t.Fatalf("patch clear: %d %v", code, body)
	}
	s = body["session"].(map[string]any)
	if s["title"] != "Renamed" || s["queueMode"] != nil || s["modelOverride"] != nil {
		t.Errorf("after clearing: %v", s)
	}
	// Durable: a fresh read sees it.
	_, hist := c.do("GET", one, nil)
	if hist["session"].(map[string]any)["title"] != "Renamed" {
		t.Errorf("title not stored: %v", hist["session"])
	}

	bad := []struct {
		name string
		body any
		want int
	}{
		{"bad JSON", `{"title":`, 400},
		{"empty body", "", 400},
		{"trailing data", `{"title":"a"} {}`, 400},
		{"unknown field", `{"name":"x"}`, 400},
		{"nothing to change", `{}`, 400},
		{"empty title", `{"title":"  "}`, 400},
		{"long title", map[string]string{"title": strings.Repeat("x", 201)}, 400},
		{"bad queue mode", `{"queueMode":"later"}`, 400},
		{"model without provider", `{"model":"gpt-4o"}`, 400},
		{"model of unknown provider", `{"model":"nope/gpt-4o"}`, 400},
		{"model the config does not offer", `{"model":"local/echo-2"}`, 400},
		{"wrong type", `{"title":5}`, 400},
		// PostgreSQL text holds no NUL (it answered 500 with its driver
		// error; files stored it, and `storage migrate` then failed).
		{"NUL in label", `{"label":"a\u0000b"}`, 400},
		// A label is one line: `gateway sessions list` prints it in a
		// column, and a line break there forged a row of its own.
		{"line break in label", `{"label":"ops\nagent:main:web:direct:x"}`, 400},
		{"carriage return in label", `{"label":"ops\rx"}`, 400},
		{"NUL in model", `{"model":"local/ec\u0000ho"}`, 400},
		{"oversized", `{"title":"` + strings.Repeat("a", api.MaxBody) + `"}`, 413},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			var body any = tc.body
			if tc.body == "" {
				body = nil
			}
			code, ans := c.do("PATCH", one, body)
			if code != tc.want || ans["error"] == nil {
				t.Errorf("status %d %v, want %d with a JSON error", code, ans, tc.want)
			}
		})
	}
}

func TestDeleteArchives(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	sid := c.chat("main", "to be deleted", "").SessionID
	one := "/api/agents/main/sessions/" + sid
	code, body := c.do("DELETE", one, nil)
	if code != 200 || body["archived"] != true {
		t.Fatalf("delete: %d %v", code, body)
	}
	if code, _ := c.do("GET", one, nil); code != 404 {
		t.Errorf("GET after delete: %d, want 404", code)
	}
	if _, list := c.do("GET", "/api/agents/main/sessions", nil); len(list["sessions"].([]any)) != 0 {
		t.Errorf("list after delete: %v", list)
	}
	archived, _ := filepath.Glob(filepath.Join(env.StateDir, "agents", "main", "sessions", sid+".jsonl.deleted.*"))
	if len(archived) != 1 {
		t.Fatalf("archived transcripts %v, want one %s.jsonl.deleted.*", archived, sid)
	}
	if b, err := os.ReadFile(archived[0]); err != nil || !bytes.Contains(b, []byte("to be deleted")) {
		t.Errorf("archived transcript lost its messages: %v", err)
	}
	if code, _ := c.do("DELETE", one, nil); code != 404 {
		t.Errorf("second delete: %d, want 404", code)
	}
}

func TestResetStartsNewSession(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	first := c.chat("main", "before reset", "").SessionID
	code, body := c.do("POST", "/api/agents/main/sessions/"+first+"/reset", nil)
	if code != 200 {
		t.Fatalf("reset: %d %v", code, body)
	}
	next := body["session"].(map[string]any)["sessionId"].(string)
	if next == "" || next == first || body["previousSessionId"] != first {
		t.Fatalf("reset answer %v", body)
	}
	if code, _ := c.do("GET", "/api/agents/main/sessions/"+first, nil); code != 404 {
		t.Errorf("old id after reset: %d, want 404", code)
	}
	code, hist := c.do("GET", "/api/agents/main/sessions/"+next, nil)
	if code != 200 || len(hist["messages"].([]any)) != 0 {
		t.Errorf("new session: %d %v, want empty history", code, hist)
	}
	if a, _ := filepath.Glob(filepath.Join(env.StateDir, "agents", "main", "sessions", first+".jsonl.reset.*")); len(a) != 1 {
		t.Errorf("archived transcripts %v, want %s.jsonl.reset.*", a, first)
	}
	// The web conversation continues in the new session.
	r := c.chat("main", "after reset", next)
	if r.SessionID != next {
		t.Errorf("chat after reset went to %s, want %s", r.SessionID, next)
	}
}

func TestCompact(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	sid := c.chat("main", "one", "").SessionID
	for _, m := range []string{"two", "three", "four"} {
		c.chat("main", m, sid)
	}
	code, body := c.do("POST", "/api/agents/main/sessions/"+sid+"/compact", `{"instructions":"keep it short"}`)
	if code != 200 {
		t.Fatalf("compact: %d %v", code, body)
	}
	s := body["session"].(map[string]any)
	if s["sessionId"] != sid || s["compactionCount"].(float64) < 1 {
		t.Errorf("after compact: %v, want the same session with a compaction counted", s)
	}
	// History keeps every message (compaction never deletes).
	_, hist := c.do("GET", "/api/agents/main/sessions/"+sid, nil)
	if n := len(hist["messages"].([]any)); n != 8 {
		t.Errorf("history after compact has %d messages, want 8", n)
	}
	if code, _ := c.do("POST", "/api/agents/main/sessions/"+sid+"/compact", `{"bogus":true}`); code != 400 {
		t.Errorf("compact with unknown field: %d, want 400", code)
	}
}

// TestCompactNothingToCompact: a session with one exchange has nothing
// before its last user message; the API says so with 409, not 500.
func TestCompactNothingToCompact(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	sid := c.chat("main", "only one", "").SessionID
	code, body := c.do("POST", "/api/agents/main/sessions/"+sid+"/compact", `{}`)
	if code != 409 || !strings.Contains(body["error"].(string), "nothing to compact") {
		t.Fatalf("compact of a one-message session: %d %v, want 409 naming nothing to compact", code, body)
	}
}

func TestUnknownThingsAndMethods(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Agents: []string{"main", "helper"}})
	c := newClient(t, env, "")
	const missing = "/api/agents/main/sessions/11111111-1111-1111-1111-111111111111"
	tests := []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", missing, nil, 404},
		{"PATCH", missing, `{"title":"x"}`, 404},
		{"DELETE", missing, nil, 404},
		{"POST", missing + "/reset", nil, 404},
		{"POST", missing + "/compact", nil, 404},
		{"GET", "/api/agents/nobody/sessions", nil, 404},
		{"GET", "/api/agents/nobody/sessions/x", nil, 404},
		{"GET", "/api/whatever", nil, 404},
		{"PUT", missing, nil, 405},
		{"GET", "/api/agents/main/chat", nil, 405},
		{"POST", "/api/agents/main/sessions", nil, 405},
		{"GET", missing + "/reset", nil, 405},
		{"DELETE", "/api/agents", nil, 405},
	}
	for _, tc := range tests {
		code, body := c.do(tc.method, tc.path, tc.body)
		if code != tc.want || body["error"] == nil {
			t.Errorf("%s %s: %d %v, want %d with a JSON error", tc.method, tc.path, code, body, tc.want)
		}
	}
	res := c.raw("PUT", missing, nil)
	res.Body.Close()
	if got := res.Header.Get("Allow"); got != "GET, PATCH, DELETE" {
		t.Errorf("Allow %q", got)
	}
	code, body := c.do("GET", "/api/agents", nil)
	if code != 200 || !cmp.Equal(body["agents"], []any{"main", "helper"}) {
		t.Errorf("agents: %d %v", code, body)
	}
}

func TestProbesMetricsAndPage(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	if code, body := c.do("GET", "/healthz", nil); code != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", code, body)
	}
	if code, _ := c.do("GET", "/readyz", nil); code != 200 {
		t.Errorf("readyz when ready: %d", code)
	}
	env.Server.SetReady(false)
	if code, _ := c.do("GET", "/readyz", nil); code != 503 {
		t.Errorf("readyz when not ready: %d, want 503", code)
	}
	env.Server.SetReady(true)

	c.chat("main", "count me", "")
	res := c.raw("GET", "/metrics", nil)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(data, []byte(`gateway_inbound_messages_total{channel="web"}`)) {
		t.Errorf("metrics: %d, want the inbound counter of the web channel:\n%s", res.StatusCode, data)
	}

	res = c.raw("GET", "/", nil)
	data, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!bytes.Contains(data, []byte("<title>gateway</title>")) {
		t.Errorf("page: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("page CSP %q", csp)
	}
	for _, p := range []string{"/app.js", "/style.css"} {
		if code, _ := c.do("GET", p, nil); code != 200 {
			t.Errorf("GET %s: %d", p, code)
		}
	}
	if code, _ := c.do("POST", "/", "x"); code != 405 {
		t.Errorf("POST /: %d, want 405", code)
	}
}
