package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type toolUse struct{ id, name, args string }

// reply scripts one answer of the fake Messages API.
type reply struct {
	status     int
	retryAfter string
	errType    string
	errMsg     string
	text       string
	tools      []toolUse
}

// fakeServer speaks the Messages streaming protocol (SSE events
// message_start, content_block_start/delta/stop, ping, message_delta,
// message_stop).
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	replies []reply
}

func newFake(t *testing.T, replies ...reply) *fakeServer {
	f := &fakeServer{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	rep := reply{text: "default"}
	if n < len(f.replies) {
		rep = f.replies[n]
	}
	f.mu.Unlock()
	if rep.status != 0 {
		if rep.retryAfter != "" {
			w.Header().Set("Retry-After", rep.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, rep.errType, rep.errMsg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 42, "output_tokens": 1},
	}})
	idx := 0
	if rep.text != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("ping", map[string]any{"type": "ping"})
		for _, part := range thirds(rep.text) {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for _, tu := range rep.tools {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{
			"type": "tool_use", "id": tu.id, "name": tu.name, "input": map[string]any{}}})
		for _, part := range thirds(tu.args) {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	stop := "end_turn"
	if len(rep.tools) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 9}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func thirds(s string) []string {
	if s == "" {
		return nil
	}
	n := (len(s) + 2) / 3
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func newProvider(t *testing.T, f *fakeServer, retries int) *Provider {
	t.Helper()
	p, err := New(Config{Name: "claude", Provider: llm.ProviderConfig{Type: "anthropic", BaseURL: f.URL, APIKey: "sk-ant-test", MaxRetries: llm.Retry(retries)},
		RetryBaseDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func user(s string) sessions.Message {
	return sessions.Message{Role: "user", Content: []sessions.Content{{Type: "text", Text: s}}}
}

func TestStreamText(t *testing.T) {
	f := newFake(t, reply{text: "Hello from Claude"})
	var deltas []string
	msg, err := newProvider(t, f, 0).Stream(context.Background(), llm.Request{Model: "claude-test", System: "sys", Messages: []sessions.Message{user("hi")}},
		func(e llm.Event) { deltas = append(deltas, e.TextDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "") != "Hello from Claude" || len(deltas) != 3 {
		t.Fatalf("deltas %q", deltas)
	}
	msg.Timestamp = 0
	want := sessions.Message{Role: "assistant", Content: []sessions.Content{{Type: "text", Text: "Hello from Claude"}}, Provider: "claude",
		Model: "claude-test", Usage: &sessions.Usage{Input: 42, Output: 9, TotalTokens: 51}, StopReason: llm.StopEnd}
	if d := cmp.Diff(want, msg); d != "" {
		t.Fatalf("(-want +got)\n%s", d)
	}
	body := f.requests()[0]
	if body["stream"] != true || body["max_tokens"] != float64(DefaultMaxTokens) {
		t.Fatalf("body = %v", body)
	}
	if sys, _ := json.Marshal(body["system"]); !strings.Contains(string(sys), `"sys"`) {
		t.Fatalf("system = %s", sys)
	}
	if f.headers[0].Get("X-Api-Key") != "sk-ant-test" {
		t.Fatalf("x-api-key = %q", f.headers[0].Get("X-Api-Key"))
	}
}

func TestStreamToolUseFromFragments(t *testing.T) {
	f := newFake(t, reply{text: "checking", tools: []toolUse{{"toolu_1", "sessions_list", `{"limit": 3}`}, {"toolu_2", "sessions_history", `{"sessionKey":"agent:main:main"}`}}})
	p := newProvider(t, f, 0)
	msgs := []sessions.Message{
		user("first"),
		{Role: "assistant", Content: []sessions.Content{{Type: "text", Text: "calling"}, {Type: "toolCall", ID: "toolu_0", Name: "sessions_list", Arguments: json.RawMessage(`{}`)}}},
		{Role: "toolResult", ToolCallID: "toolu_0", ToolName: "sessions_list", Content: []sessions.Content{{Type: "text", Text: "[]"}}},
		user("and now?"),
	}
	var events []string
	msg, err := p.Stream(context.Background(), llm.Request{Model: "m", Messages: msgs,
		Tools: []llm.Tool{{Name: "sessions_list", Description: "list", Parameters: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"}},"required":["limit"]}`)}}},
		func(e llm.Event) {
			if e.ToolCall != nil {
				events = append(events, e.ToolCall.ID)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []sessions.Content{
		{Type: "text", Text: "checking"},
		{Type: "toolCall", ID: "toolu_1", Name: "sessions_list", Arguments: json.RawMessage(`{"limit": 3}`)},
		{Type: "toolCall", ID: "toolu_2", Name: "sessions_history", Arguments: json.RawMessage(`{"sessionKey":"agent:main:main"}`)},
	}
	if d := cmp.Diff(want, msg.Content); d != "" {
		t.Fatalf("(-want +got)\n%s", d)
	}
	if msg.StopReason != llm.StopToolUse || !cmp.Equal(events, []string{"toolu_1", "toolu_2"}) {
		t.Fatalf("stop %q events %v", msg.StopReason, events)
	}
	body := f.requests()[0]
	sent, _ := json.Marshal(body["messages"])
	var turns []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			ID        string          `json:"id"`
			Input     json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal(sent, &turns); err != nil {
		t.Fatal(err)
	}
	// user, assistant(text+tool_use), user(tool_result + text merged)
	if len(turns) != 3 || turns[1].Content[1].Type != "tool_use" || turns[1].Content[1].ID != "toolu_0" ||
		turns[2].Role != "user" || turns[2].Content[0].Type != "tool_result" || turns[2].Content[0].ToolUseID != "toolu_0" || turns[2].Content[1].Type != "text" {
		t.Fatalf("sent turns = %s", sent)
	}
	tools, _ := json.Marshal(body["tools"])
	if !strings.Contains(string(tools), `"required":["limit"]`) || !strings.Contains(string(tools), `"name":"sessions_list"`) {
		t.Fatalf("tools = %s", tools)
	}
}

func TestRetries(t *testing.T) {
	for _, first := range []reply{
		{status: 429, retryAfter: "0", errType: "rate_limit_error", errMsg: "slow down"},
		{status: 500, errType: "api_error", errMsg: "oops"},
		{status: 529, errType: "overloaded_error", errMsg: "overloaded"},
	} {
		f := newFake(t, first, reply{text: "ok"})
		msg, err := newProvider(t, f, 2).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
		if err != nil {
			t.Fatalf("%d: %v", first.status, err)
		}
		if msg.Text() != "ok" || len(f.requests()) != 2 {
			t.Fatalf("%d: text %q after %d requests", first.status, msg.Text(), len(f.requests()))
		}
	}
}

func TestContextOverflow(t *testing.T) {
	f := newFake(t, reply{status: 400, errType: "invalid_request_error", errMsg: "prompt is too long: 210000 tokens > 200000 maximum"})
	_, err := newProvider(t, f, 3).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if !errors.Is(err, llm.ErrContextOverflow) || len(f.requests()) != 1 {
		t.Fatalf("err %v after %d requests", err, len(f.requests()))
	}
	f = newFake(t, reply{status: 400, errType: "invalid_request_error", errMsg: "bad field"})
	_, err = newProvider(t, f, 3).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if err == nil || errors.Is(err, llm.ErrContextOverflow) {
		t.Fatalf("err = %v, want a plain error", err)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Provider: llm.ProviderConfig{Type: "anthropic"}}, {Name: "x", Provider: llm.ProviderConfig{Type: "openai"}}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}
