package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goopenai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newProvider(t *testing.T, srv *openaitest.Server, retries int) *Provider {
	t.Helper()
	p, err := New(Config{
		Name:           "openai",
		Provider:       llm.ProviderConfig{Type: "openai", BaseURL: srv.BaseURL(), APIKey: "sk-test", MaxRetries: llm.Retry(retries), Headers: map[string]string{"x-extra": "1"}},
		RetryBaseDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func user(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "text", Text: text}}}
}

func TestStreamText(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Script(openaitest.Reply{Text: "Hello there, friend", Usage: &goopenai.Usage{PromptTokens: 11, CompletionTokens: 5, TotalTokens: 16}})
	p := newProvider(t, srv, 0)
	var deltas []string
	msg, err := p.Stream(context.Background(), llm.Request{Model: "gpt-4o-mini", System: "be brief", Messages: []sessions.Message{user("hi")}},
		func(e llm.Event) { deltas = append(deltas, e.TextDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != "Hello there, friend" {
		t.Fatalf("deltas = %q", deltas)
	}
	want := sessions.Message{Role: "assistant", Content: []sessions.Content{{Type: "text", Text: "Hello there, friend"}},
		Provider: "openai", Model: "gpt-4o-mini", Usage: &sessions.Usage{Input: 11, Output: 5, TotalTokens: 16}, StopReason: llm.StopEnd}
	msg.Timestamp = 0
	if d := cmp.Diff(want, msg); d != "" {
		t.Fatalf("message (-want +got):\n%s", d)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if r.Header.Get("X-Extra") != "1" {
		t.Errorf("extra header missing")
	}
	if r.Body.StreamOptions == nil || !r.Body.StreamOptions.IncludeUsage {
		t.Errorf("stream_options.include_usage not set")
	}
	if len(r.Body.Messages) != 2 || r.Body.Messages[0].Role != "system" || r.Body.Messages[1].Content != "hi" {
		t.Errorf("messages = %+v", r.Body.Messages)
	}
}

func TestStreamToolCallsFromFragments(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Script(openaitest.Reply{Text: "let me check", ToolCalls: []openaitest.ToolCall{
		{ID: "call_1", Name: "sessions_list", Arguments: `{"limit": 5}`},
		{ID: "call_2", Name: "sessions_spawn", Arguments: `{"task":"summarise the logs","label":"logs"}`},
	}})
	p := newProvider(t, srv, 0)
	var calls []sessions.Content
	msg, err := p.Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("go")},
		Tools: []llm.Tool{{Name: "sessions_list", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		func(e llm.Event) {
			if e.ToolCall != nil {
				calls = append(calls, *e.ToolCall)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []sessions.Content{
		{Type: "text", Text: "let me check"},
		{Type: "toolCall", ID: "call_1", Name: "sessions_list", Arguments: json.RawMessage(`{"limit": 5}`)},
		{Type: "toolCall", ID: "call_2", Name: "sessions_spawn", Arguments: json.RawMessage(`{"task":"summarise the logs","label":"logs"}`)},
	}
	if d := cmp.Diff(want, msg.Content); d != "" {
		t.Fatalf("content (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[1:], calls); d != "" {
		t.Fatalf("tool call events (-want +got):\n%s", d)
	}
	if msg.StopReason != llm.StopToolUse {
		t.Errorf("stop reason = %q", msg.StopReason)
	}
	if tools := srv.Requests()[0].Body.Tools; len(tools) != 1 || tools[0].Function.Name != "sessions_list" {
		t.Errorf("tools sent = %+v", tools)
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first openaitest.Reply
	}{
		{"429 then success", openaitest.Reply{Status: 429, RetryAfter: "0", ErrorMessage: "slow down"}},
		{"500 then success", openaitest.Reply{Status: 500}},
		{"503 then success", openaitest.Reply{Status: 503, RetryAfter: "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t)
			srv.Script(tc.first, openaitest.Reply{Text: "ok"})
			msg, err := newProvider(t, srv, 2).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Text() != "ok" || len(srv.Requests()) != 2 {
				t.Fatalf("text %q after %d requests", msg.Text(), len(srv.Requests()))
			}
			if got := srv.Requests()[1].LastUserText(); got != "x" {
				t.Fatalf("retried request body lost: last user text %q", got)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetReply(func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Status: 500} })
	_, err := newProvider(t, srv, 2).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if err == nil || errors.Is(err, llm.ErrContextOverflow) {
		t.Fatalf("err = %v, want a plain error", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestContextOverflow(t *testing.T) {
	for _, rep := range []openaitest.Reply{
		{Status: 400, ErrorCode: "context_length_exceeded", ErrorMessage: "too long"},
		{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."},
	} {
		srv := openaitest.NewServer(t)
		srv.Script(rep)
		_, err := newProvider(t, srv, 3).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
		if !errors.Is(err, llm.ErrContextOverflow) {
			t.Fatalf("err = %v, want ErrContextOverflow", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("a 400 was retried: %d requests", n)
		}
	}
}

func TestToolTranscriptMapping(t *testing.T) {
	srv := openaitest.NewServer(t)
	p := newProvider(t, srv, 0)
	msgs := []sessions.Message{
		user("list"),
		{Role: "assistant", Content: []sessions.Content{{Type: "toolCall", ID: "c1", Name: "sessions_list", Arguments: json.RawMessage(`{}`)}}},
		{Role: "toolResult", ToolCallID: "c1", ToolName: "sessions_list", Content: []sessions.Content{{Type: "text", Text: "[]"}}},
	}
	if _, err := p.Stream(context.Background(), llm.Request{Model: "m", Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Body.Messages
	if len(got) != 3 || len(got[1].ToolCalls) != 1 || got[1].ToolCalls[0].ID != "c1" || got[1].ToolCalls[0].Function.Name != "sessions_list" ||
		got[2].Role != "tool" || got[2].ToolCallID != "c1" || got[2].Content != "[]" {
		t.Fatalf("mapped messages = %+v", got)
	}
}

func TestCancelledWhileWaiting(t *testing.T) {
	srv := openaitest.NewServer(t)
	hold := make(chan struct{})
	defer close(hold)
	srv.Script(openaitest.Reply{Hold: hold, Text: "late"})
	p := newProvider(t, srv, 3)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
		errc <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("a cancelled call was retried: %d requests", n)
	}
}

func TestRawArgs(t *testing.T) {
	for in, want := range map[string]string{"": `{}`, `{"a":1}`: `{"a":1}`, `{"a":`: `"{\"a\":"`} {
		if got := string(rawArgs(in)); got != want {
			t.Errorf("rawArgs(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Provider: llm.ProviderConfig{Type: "openai"}},
		{Name: "x", Provider: llm.ProviderConfig{Type: "anthropic"}},
		{Name: "x", Provider: llm.ProviderConfig{Type: "openai", APIKey: "a", APIKeyFile: "b"}},
		{Name: "x", Provider: llm.ProviderConfig{Type: "openai", BaseURL: "ftp://x"}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}
