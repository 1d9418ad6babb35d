package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
)

// A server URL's query and user info (where hosted MCP servers take their
// API key: ?api_key=…, https://token@host/) stay out of what the errors
// say — the tool error result the model reads (and the transcript keeps,
// and the model may repeat in a chat), the status API and the logs. The
// network errors quoted the whole URL ("Post \"https://host/mcp?api_key=…\": EOF").
func TestURLSecretsKeptOutOfErrors(t *testing.T) {
	raw := rawServer{Tools: `[{"name":"echo","inputSchema":{"type":"object"}}]`, Result: `{"content":[{"type":"text","text":"ok"}]}`}
	// broken answers everything but tools/call, whose connection it drops.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close()
			return
		}
		out := raw.answer(body)
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(broken.Close)
	const secret, user = "s3cr3t-query-key", "us3r-t0ken"
	m := mcp.New(mcp.Options{Backoff: time.Minute})
	m.Apply(mcp.Config{Servers: map[string]mcp.ServerConfig{
		"broken": {URL: strings.Replace(broken.URL, "http://", "http://"+user+":pw-"+secret+"@", 1) + "/mcp?api_key=" + secret},
		"down":   {URL: "http://" + user + "@127.0.0.1:1/mcp?api_key=" + secret, ConnectTimeout: 5 * time.Second},
	}})
	run(t, m)
	m.Tools(context.Background(), nil)
	var said []string
	_, err := m.Call(context.Background(), "broken__echo", []byte(`{}`))
	if err == nil {
		t.Fatal("a call whose connection was dropped succeeded")
	}
	said = append(said, err.Error())
	for _, st := range m.Status() {
		if st.Error != "" {
			said = append(said, st.Error)
		}
	}
	if st := status(m, "down"); st.Error == "" {
		t.Fatalf("down: status %+v, want its connect error", st)
	}
	for _, s := range said {
		if strings.Contains(s, secret) || strings.Contains(s, user) {
			t.Errorf("an error quotes the URL's secrets: %s", s)
		}
		if !strings.Contains(s, "127.0.0.1") {
			t.Errorf("an error no longer names the host: %s", s)
		}
	}
}
