package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// rawFake answers each Messages request with the next scripted body (the
// last one repeats), as a 200 of contentType, and records request bodies.
type rawFake struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRawFake(t *testing.T, contentType string, bodies ...string) *rawFake {
	t.Helper()
	f := &rawFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, bodies[min(n, len(bodies)-1)])
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *rawFake) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

func rawProvider(t *testing.T, url string) *Provider {
	t.Helper()
	p, err := New(Config{Name: "claude", Provider: llm.ProviderConfig{Type: "anthropic", BaseURL: url, APIKey: "sk-ant-test"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sse renders events as the Messages API streams them: "event:" and
// "data:" lines, CRLF endings when crlf is set.
func sse(crlf bool, events ...string) string {
	nl := "\n"
	if crlf {
		nl = "\r\n"
	}
	var b strings.Builder
	for _, e := range events {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(e), &typ)
		fmt.Fprintf(&b, "event: %s%sdata: %s%s%s", typ.Type, nl, e, nl, nl)
	}
	return b.String()
}

const (
	evStart     = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`
	evTextStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evTextDelta = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The answer is"}}`
	evTextStop  = `{"type":"content_block_stop","index":0}`
	evEndTurn   = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`
	evStop      = `{"type":"message_stop"}`
)

// TestStreamCutShortIsNotAnAnswer: a Messages stream that ends before
// message_stop (the connection closed mid-answer, a proxy's page with a
// 200) is an error the fallback layer can act on, not a complete answer;
// a whole stream, CRLF endings included, is the answer.
func TestStreamCutShortIsNotAnAnswer(t *testing.T) {
	for _, tc := range []struct{ name, contentType, body string }{
		{name: "cut after text", contentType: "text/event-stream", body: sse(false, evStart, evTextStart, evTextDelta)},
		{name: "cut before message_stop", contentType: "text/event-stream", body: sse(false, evStart, evTextStart, evTextDelta, evTextStop)},
		{name: "empty stream", contentType: "text/event-stream", body: ""},
		{name: "proxy page", contentType: "text/html", body: "<html><body>Please sign in</body></html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRawFake(t, tc.contentType, tc.body)
			msg, err := rawProvider(t, f.URL).Stream(context.Background(), llm.Request{Model: "claude-test", Messages: []sessions.Message{user("x")}}, nil)
			if err == nil {
				t.Fatalf("no error; stored as an answer: %q (stop %q)", msg.Text(), msg.StopReason)
			}
			if !llm.ProviderFault(err) {
				t.Errorf("not a provider fault (no fallback would be tried): %v", err)
			}
		})
	}
	f := newRawFake(t, "text/event-stream", sse(true, evStart, evTextStart, evTextDelta, evTextStop, evEndTurn, evStop))
	msg, err := rawProvider(t, f.URL).Stream(context.Background(), llm.Request{Model: "claude-test", Messages: []sessions.Message{user("x")}}, nil)
	if err != nil || msg.Text() != "The answer is" || msg.StopReason != llm.StopEnd {
		t.Fatalf("whole CRLF stream: %q %q, %v", msg.Text(), msg.StopReason, err)
	}
}

// TestStreamErrorEventIsTheProvidersFault: an error event mid-stream
// (Anthropic sends overloaded_error this way under load) is the
// provider's trouble, so the next model of the chain is tried and the
// breaker counts it; the SDK reports it with the response's 200.
func TestStreamErrorEventIsTheProvidersFault(t *testing.T) {
	for _, tc := range []struct {
		errType string
		status  int
	}{
		{"overloaded_error", 529},
		{"api_error", 500},
		{"rate_limit_error", 429},
	} {
		t.Run(tc.errType, func(t *testing.T) {
			evErr := `{"type":"error","error":{"type":"` + tc.errType + `","message":"Overloaded"}}`
			f := newRawFake(t, "text/event-stream", sse(false, evStart, evErr))
			_, err := rawProvider(t, f.URL).Stream(context.Background(), llm.Request{Model: "claude-test", Messages: []sessions.Message{user("x")}}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !llm.ProviderFault(err) {
				t.Errorf("not a provider fault: status %d: %v", llm.HTTPStatus(err), err)
			}
			if got := llm.HTTPStatus(err); got != tc.status {
				t.Errorf("status %d, want %d: %v", got, tc.status, err)
			}
			if errors.Is(err, llm.ErrContextOverflow) {
				t.Errorf("an overflow: %v", err)
			}
		})
	}
}

// TestRedactedThinkingGoesBackAcrossToolTurns: with thinking on, the
// answer that calls a tool may hold redacted_thinking blocks (encrypted
// reasoning); the API wants every thinking block of that answer back,
// redacted ones included, when the tool result is sent, or it refuses the
// request. The block is kept in the transcript and sent back as it came.
func TestRedactedThinkingGoesBackAcrossToolTurns(t *testing.T) {
	answer := sse(false, evStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me look."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-A"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"ENCRYPTED-1"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"look","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"q\":"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"x\"}"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`,
		evStop)
	f := newRawFake(t, "text/event-stream", answer, sse(false, evStart, evTextStart, evTextDelta, evTextStop, evEndTurn, evStop))
	p := rawProvider(t, f.URL)
	msgs := []sessions.Message{user("look x")}
	msg, err := p.Stream(context.Background(), llm.Request{Model: "claude-test", Messages: msgs, Thinking: sessions.ThinkingHigh}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through the transcript's JSON, as a later turn reads it.
	b, _ := json.Marshal(msg)
	var stored sessions.Message
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, stored, sessions.Message{Role: sessions.RoleToolResult, ToolCallID: "toolu_9", ToolName: "look",
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "found"}}})
	if _, err := p.Stream(context.Background(), llm.Request{Model: "claude-test", Messages: msgs, Thinking: sessions.ThinkingHigh}, nil); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				Signature string `json:"signature"`
				Data      string `json:"data"`
				ID        string `json:"id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(f.requests()[1]), &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 {
		t.Fatalf("sent %d messages: %s", len(sent.Messages), f.requests()[1])
	}
	var got []string
	for _, c := range sent.Messages[1].Content {
		got = append(got, c.Type+":"+c.Signature+c.Data+c.ID)
	}
	want := []string{"thinking:sig-A", "redacted_thinking:ENCRYPTED-1", "tool_use:toolu_9"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("assistant turn sent back = %q, want %q", got, want)
	}
}

// TestToolIDsFromAnotherProviderAreValid: a session that moved to this
// provider (a fallback, /model) carries tool calls another provider
// named: Kimi and others served through OpenAI-compatible endpoints write
// ids like "functions.search:0", some local servers none at all. The
// Messages API refuses a tool_use id outside ^[a-zA-Z0-9_-]+$ with a 400
// (the request's fault: no further fallback, the turn fails), so ids are
// mapped onto that alphabet, each result keeping its call's.
func TestToolIDsFromAnotherProviderAreValid(t *testing.T) {
	f := newRawFake(t, "text/event-stream", sse(false, evStart, evTextStart, evTextDelta, evTextStop, evEndTurn, evStop))
	call := func(ids ...string) sessions.Message {
		m := sessions.Message{Role: sessions.RoleAssistant}
		for _, id := range ids {
			m.Content = append(m.Content, sessions.Content{Type: sessions.BlockToolCall, ID: id, Name: "search", Arguments: json.RawMessage(`{}`)})
		}
		return m
	}
	result := func(id string) sessions.Message {
		return sessions.Message{Role: sessions.RoleToolResult, ToolCallID: id, ToolName: "search", Content: []sessions.Content{{Type: "text", Text: "r-" + id}}}
	}
	msgs := []sessions.Message{user("q"),
		call("functions.search:0", "functions.search:1"), result("functions.search:0"), result("functions.search:1"),
		call("", ""), result(""), result(""),
		call("toolu_ok"), result("toolu_ok"),
		user("again")}
	if _, err := rawProvider(t, f.URL).Stream(context.Background(), llm.Request{Model: "claude-test", Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(f.requests()[0]), &sent); err != nil {
		t.Fatal(err)
	}
	valid := func(id string) bool {
		if id == "" {
			return false
		}
		for _, r := range id {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return false
			}
		}
		return true
	}
	var uses, results []string
	seen := map[string]bool{}
	for _, m := range sent.Messages {
		for _, c := range m.Content {
			switch c.Type {
			case "tool_use":
				if !valid(c.ID) || seen[c.ID] {
					t.Errorf("tool_use id %q: invalid or repeated", c.ID)
				}
				seen[c.ID] = true
				uses = append(uses, c.ID)
			case "tool_result":
				results = append(results, c.ToolUseID)
			}
		}
	}
	if strings.Join(uses, ",") != strings.Join(results, ",") || len(uses) != 5 || uses[4] != "toolu_ok" {
		t.Fatalf("tool_use ids %q, tool_result ids %q: want the same, in order, toolu_ok kept", uses, results)
	}
}

// TestRefusalStopReason: stop_reason "refusal" is llm.StopRefusal (the
// runner then tells the member the model declined), not a plain stop.
func TestRefusalStopReason(t *testing.T) {
	f := newRawFake(t, "text/event-stream", sse(false, evStart,
		`{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":1}}`, evStop))
	msg, err := rawProvider(t, f.URL).Stream(context.Background(), llm.Request{Model: "claude-test", Messages: []sessions.Message{user("x")}}, nil)
	if err != nil || msg.StopReason != llm.StopRefusal {
		t.Fatalf("stop %q, %v; want %q", msg.StopReason, err, llm.StopRefusal)
	}
}
