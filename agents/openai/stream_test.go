package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// rawServer answers every chat completion with status and body as given,
// and records the requests' paths and lengths.
type rawServer struct {
	*httptest.Server
	paths   []string
	lengths []int64
	bodies  []string
}

func newRawServer(t *testing.T, status int, contentType, body string) *rawServer {
	t.Helper()
	s := &rawServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.paths = append(s.paths, r.URL.Path)
		s.lengths = append(s.lengths, r.ContentLength)
		s.bodies = append(s.bodies, string(b))
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func rawProvider(t *testing.T, baseURL string) *Provider {
	t.Helper()
	p, err := New(Config{Name: "openai", Provider: llm.ProviderConfig{Type: "openai", BaseURL: baseURL, APIKey: "sk-test"}, RetryBaseDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamServerSentEvents: comments, blank lines, CRLF endings, "data:"
// without a space, a line longer than the read buffer and tool-call
// fragments without an index are all read; usage with cached tokens is
// counted as before.
func TestStreamServerSentEvents(t *testing.T) {
	long := strings.Repeat("x", 20000)
	sse := strings.Join([]string{
		": keep-alive",
		"",
		`data: {"model":"served-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		"",
		"event: message\r",
		`data:{"choices":[{"delta":{"content":"Hello "}}]}` + "\r",
		"\r",
		`data: {"choices":[{"delta":{"content":"` + long + `"}}]}`,
		"",
		`data: {"choices":[{"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"look","arguments":"{\"a\""}}]}}]}`,
		`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}`,
		`data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: {"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":60}}}`,
		"",
		"data: [DONE]",
		"",
		`data: {"choices":[{"delta":{"content":"after done"}}]}`,
		"",
	}, "\n")
	srv := newRawServer(t, 200, "text/event-stream", sse)
	var deltas []string
	msg, err := rawProvider(t, srv.URL+"/v1/").Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("hi")}},
		func(e llm.Event) {
			if e.TextDelta != "" {
				deltas = append(deltas, e.TextDelta)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	msg.Timestamp = 0
	want := sessions.Message{Role: "assistant", Provider: "openai", Model: "served-model", StopReason: llm.StopToolUse,
		Content: []sessions.Content{{Type: "text", Text: "Hello " + long}, {Type: "toolCall", ID: "c1", Name: "look", Arguments: json.RawMessage(`{"a":1}`)}},
		Usage:   &sessions.Usage{Input: 40, Output: 7, CacheRead: 60, TotalTokens: 107}}
	if d := cmp.Diff(want, msg); d != "" {
		t.Fatalf("message (-want +got):\n%s", d)
	}
	if len(deltas) != 2 {
		t.Errorf("%d text deltas, want 2", len(deltas))
	}
	if len(srv.paths) != 1 || srv.paths[0] != "/v1/chat/completions" {
		t.Errorf("paths = %q, want /v1/chat/completions", srv.paths)
	}
	if srv.lengths[0] != int64(len(srv.bodies[0])) {
		t.Errorf("Content-Length %d for a body of %d bytes", srv.lengths[0], len(srv.bodies[0]))
	}
}

// TestStreamEndsWithoutDone: a stream cut after its last chunk (no
// "[DONE]") is the answer so far, as go-openai read it.
func TestStreamEndsWithoutDone(t *testing.T) {
	srv := newRawServer(t, 200, "text/event-stream", `data: {"choices":[{"delta":{"content":"partial"},"finish_reason":"length"}]}`+"\n\n")
	msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() != "partial" || msg.StopReason != llm.StopLength {
		t.Fatalf("text %q, stop %q", msg.Text(), msg.StopReason)
	}
}

// TestStreamErrors: what each failing answer becomes — an overflow is
// llm.ErrContextOverflow, an HTTP status is carried for retry and
// failover, a body that is not JSON still names the status.
func TestStreamErrors(t *testing.T) {
	overflow := "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		overflow    bool
		wantStatus  int
		wantText    []string
	}{
		{name: "overflow code", status: 400, body: `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			overflow: true, wantText: []string{"too long", "400"}},
		{name: "overflow text", status: 400, body: `{"error":{"message":"` + overflow + `","type":"invalid_request_error","code":null}}`,
			overflow: true},
		{name: "overflow 413", status: 413, body: `{"error":{"message":"request too large","code":"context_length_exceeded"}}`, overflow: true},
		{name: "overflow text, not JSON", status: 400, contentType: "text/plain", body: overflow, overflow: true},
		{name: "message list", status: 400, body: `{"error":{"message":["bad schema","field x"],"type":"invalid_request_error"}}`,
			wantStatus: 400, wantText: []string{"bad schema, field x"}},
		{name: "numeric code", status: 400, body: `{"error":{"message":"bad","type":"t","code":400}}`, wantStatus: 400, wantText: []string{"bad"}},
		{name: "overflow code on 500", status: 500, body: `{"error":{"message":"too long","code":"context_length_exceeded"}}`, wantStatus: 500},
		{name: "unauthorized", status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			wantStatus: 401, wantText: []string{"Incorrect API key provided", "401"}},
		{name: "not JSON", status: 502, contentType: "text/html", body: "<html>Bad Gateway</html>", wantStatus: 502,
			wantText: []string{"502", "Bad Gateway"}},
		{name: "null error", status: 404, body: `{"error":null}`, wantStatus: 404, wantText: []string{"404"}},
		{name: "mid-stream overflow", status: 200, contentType: "text/event-stream",
			body:     `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"error":{"message":"` + overflow + `","type":"server_error"}}` + "\n\n",
			overflow: true},
		{name: "mid-stream error", status: 200, contentType: "text/event-stream",
			body:     `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"error":{"message":"model crashed","type":"server_error","code":"oops"}}` + "\n\n",
			wantText: []string{"model crashed", "stream"}},
		{name: "200 with an error body", status: 200, contentType: "application/json",
			body: `{"error":{"message":"quota exceeded","type":"insufficient_quota"}}`, wantText: []string{"quota exceeded"}},
		{name: "broken chunk", status: 200, contentType: "text/event-stream", body: "data: {\"choices\":[{\"delta\n\n", wantText: []string{"decoding chunk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.contentType
			if ct == "" {
				ct = "application/json"
			}
			srv := newRawServer(t, tc.status, ct, tc.body)
			_, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, llm.ErrContextOverflow); got != tc.overflow {
				t.Errorf("overflow = %v, want %v: %v", got, tc.overflow, err)
			}
			if got := llm.HTTPStatus(err); got != tc.wantStatus {
				t.Errorf("status = %d, want %d: %v", got, tc.wantStatus, err)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestRequestBodyReleasedOnce: the buffer outlives the call while a reader
// net/http was given is open, and no reader can be opened after the last
// holder let go.
func TestRequestBodyReleasedOnce(t *testing.T) {
	b := newRequestBody()
	b.buf.WriteString("payload")
	r1, err := b.open()
	if err != nil {
		t.Fatal(err)
	}
	b.release() // the call is done; net/http still holds r1
	if got, err := io.ReadAll(r1); err != nil || string(got) != "payload" {
		t.Fatalf("read %q, %v after the call let go", got, err)
	}
	r2, err := b.open() // a retry
	if err != nil {
		t.Fatal(err)
	}
	_ = r1.Close()
	_ = r1.Close() // twice is once
	if got, err := io.ReadAll(r2); err != nil || string(got) != "payload" {
		t.Fatalf("second reader read %q, %v", got, err)
	}
	_ = r2.Close()
	if _, err := r2.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after close succeeded")
	}
	if _, err := b.open(); !errors.Is(err, errBodyReleased) {
		t.Fatalf("open after release: %v", err)
	}
}
