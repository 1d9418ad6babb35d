package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/internal/webtest"
)

// send makes one request with the given headers and body to env and
// returns the status and body.
func send(t *testing.T, env *webtest.Env, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const jsonCT = "application/json"

// TestHostCheckStopsDNSRebinding: on the default tokenless loopback setup a
// request whose Host is not a loopback name (a page on evil.example that
// rebound its name to 127.0.0.1) is refused before any route runs.
func TestHostCheckStopsDNSRebinding(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	port := env.URL[strings.LastIndexByte(env.URL, ':')+1:]
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example"} {
		if code, body := send(t, env, "GET", "/api/agents/main/sessions", map[string]string{"Host": host}, ""); code != http.StatusMisdirectedRequest ||
			!strings.Contains(body, "allowedHosts") {
			t.Errorf("Host %s: %d %s, want 421", host, code, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		if code, _ := send(t, env, "GET", "/api/agents/main/sessions", map[string]string{"Host": host}, ""); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
}

// TestCrossOriginAndNonJSONRefused: a browser page elsewhere cannot post a
// chat (Origin check), and no request body is accepted unless it says it
// is JSON (a cross-site form post cannot).
func TestCrossOriginAndNonJSONRefused(t *testing.T) {
	env := webtest.Start(t, webtest.Config{AllowedOrigins: []string{"https://ops.example.com"}})
	u, _ := url.Parse(env.URL)
	chat := `{"message":"hello"}`
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"foreign origin", map[string]string{"Origin": "http://evil.example", "Content-Type": jsonCT}, http.StatusForbidden},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"no content type", map[string]string{}, http.StatusUnsupportedMediaType},
		{"same origin", map[string]string{"Origin": "http://" + u.Host, "Content-Type": jsonCT}, http.StatusOK},
		{"configured origin", map[string]string{"Origin": "https://ops.example.com", "Content-Type": jsonCT + "; charset=utf-8"}, http.StatusOK},
	}
	for _, tt := range tests {
		if code, body := send(t, env, "POST", "/api/agents/main/chat", tt.hdr, chat); code != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, code, body, tt.want)
		}
	}
}

// TestAuthSchemesAndBlankTokens: the bearer scheme is case-insensitive;
// other schemes, blank and wrong tokens get 401.
func TestAuthSchemesAndBlankTokens(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "s3cret"})
	for auth, want := range map[string]int{
		"Bearer s3cret": 200, "bearer s3cret": 200, "BEARER s3cret": 200, "Bearer  s3cret ": 200,
		"Basic s3cret": 401, "Bearer": 401, "Bearer ": 401, "s3cret": 401, "Bearer s3cre": 401, "": 401,
	} {
		hdr := map[string]string{}
		if auth != "" {
			hdr["Authorization"] = auth
		}
		if code, _ := send(t, env, "GET", "/api/agents/main/sessions", hdr, ""); code != want {
			t.Errorf("Authorization %q: %d, want %d", auth, code, want)
		}
	}
}

// TestUnauthorizedAnsweredWithoutWaitingForTheBody: a client announcing a
// large body and never sending it gets its 401 at once, and the connection
// is closed (it cannot hold the server).
func TestUnauthorizedAnsweredWithoutWaitingForTheBody(t *testing.T) {
	env := webtest.Start(t, webtest.Config{Token: "s3cret"})
	u, _ := url.Parse(env.URL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, "POST /api/agents/main/chat HTTP/1.1\r\nHost: "+u.Host+
		"\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !res.Close {
		t.Fatalf("answer %d (close %v), want 401 and a closed connection", res.StatusCode, res.Close)
	}
}

// TestTrailingDataAfterJSONRefused: a body with anything after its JSON
// object is a 400 naming the problem, on the chat and the session routes.
func TestTrailingDataAfterJSONRefused(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	hdr := map[string]string{"Content-Type": jsonCT}
	if code, body := send(t, env, "POST", "/api/agents/main/chat", hdr, `{"message":"hi"} {"message":"again"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "trailing data") {
		t.Errorf("chat with trailing data: %d %s", code, body)
	}
}

// TestListLimitReturnsTheMostRecent: ?limit=n returns the n most recently
// updated sessions (without copying a large index); a bad limit is a 400.
func TestListLimitReturnsTheMostRecent(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	var sids []string
	for _, m := range []string{"one", "two", "three"} {
		sids = append(sids, c.chat("main", m, "").SessionID)
	}
	code, body := c.do("GET", "/api/agents/main/sessions?limit=2", nil)
	list, _ := body["sessions"].([]any)
	if code != 200 || len(list) != 2 {
		t.Fatalf("limit=2: %d %v", code, body)
	}
	got := map[string]bool{}
	for _, s := range list {
		got[s.(map[string]any)["sessionId"].(string)] = true
	}
	if !got[sids[2]] || !got[sids[1]] {
		t.Errorf("limit=2 returned %v, want the two newest of %v", got, sids)
	}
	if code, _ := c.do("GET", "/api/agents/main/sessions?limit=zero", nil); code != 400 {
		t.Errorf("bad limit: %d, want 400", code)
	}
	// A misspelt limit is named, not ignored (it listed every session).
	if code, body := c.do("GET", "/api/agents/main/sessions?limt=2", nil); code != 400 || !strings.Contains(body["error"].(string), `"limt"`) {
		t.Errorf("misspelt limit: %d %v, want 400 naming it", code, body)
	}
}
