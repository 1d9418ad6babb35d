package gatewayd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels/web"
)

// browserClient is an HTTP client with a cookie jar, as a browser is.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// chatAs posts one new web chat (a new session each time) with c and
// returns the status and body (the stream is read to its end).
func chatAs(t *testing.T, c *http.Client, addr, text string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text})
	resp, err := c.Post("http://"+addr+"/api/agents/main/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebNewSessionsDoNotEscapeSenderLimit is the attack of issue 22 item
// 8: throttled by the per-sender rate, a web chat client opened six new
// sessions and got six answers (the web chat's sender was its session).
// With a sender identity every new session is the same sender and is
// refused; in cookie mode another browser is another sender.
func TestWebNewSessionsDoNotEscapeSenderLimit(t *testing.T) {
	for _, mode := range []string{"", web.IdentityToken, web.IdentityCookie, web.IdentityAddress} {
		name := mode
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "gateway.yaml")
			state := filepath.Join(dir, "state")
			extra := "limits: {defaults: {sender: {rate: 1/h}}}\n"
			if mode != "" {
				extra += "channels: {web: {senderIdentity: " + mode + "}}\n"
			}
			if err := os.WriteFile(path, []byte(reloadYAML(state, extra)), 0o600); err != nil {
				t.Fatal(err)
			}
			addr := startFromFile(t, path, &fakeClock{})
			person := browserClient(t)
			if code, body := chatAs(t, person, addr, "first"); code != http.StatusOK {
				t.Fatalf("first message: %d %s", code, body)
			}
			for i := range 6 {
				code, body := chatAs(t, person, addr, "new session "+string(rune('a'+i)))
				if code != http.StatusForbidden || !strings.Contains(body, "Slow down") {
					t.Errorf("new session %d after the throttle: %d %s, want 403 Slow down", i+1, code, body)
				}
			}
			if mode == web.IdentityCookie {
				if code, body := chatAs(t, browserClient(t), addr, "another browser"); code != http.StatusOK {
					t.Errorf("another browser: %d %s, want its own limit", code, body)
				}
				fi, err := os.Stat(filepath.Join(state, "web", "sender.key"))
				if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != senderKeySize {
					t.Errorf("sender key: %v %v, want %d bytes, 0600", fi, err, senderKeySize)
				}
			}
		})
	}
}
