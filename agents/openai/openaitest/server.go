// Package openaitest is a fake OpenAI-compatible chat completions server
// for tests: it speaks the real streaming protocol (SSE chunks ending in
// "data: [DONE]"), records every request and answers with a scripted reply.
// With SetKey it also counts, per key (a chat, a session), how many
// requests were in flight at once (keys.go).
//
// A Server is safe for concurrent use; NewServer closes it by t.Cleanup,
// New leaves closing to the caller (cmd/gateway-bench).
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
)

// Request is one recorded request.
type Request struct {
	Body   goopenai.ChatCompletionRequest
	Header http.Header
	// Path is the request's URL path (see BaseURLVia).
	Path string
}

// LastUserText is the content of the last user message.
func (r Request) LastUserText() string {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		m := r.Body.Messages[i]
		if m.Role == goopenai.ChatMessageRoleUser {
			if m.Content != "" {
				return m.Content
			}
			var s strings.Builder
			for _, p := range m.MultiContent {
				s.WriteString(p.Text)
			}
			return s.String()
		}
	}
	return ""
}

// ToolCall is a scripted tool call; its arguments are streamed in fragments.
type ToolCall struct {
	ID, Name, Arguments string
}

// Reply scripts one answer.
type Reply struct {
	// Status other than 0/200 answers with an OpenAI error body.
	Status       int
	RetryAfter   string // Retry-After header of an error answer
	ErrorCode    string // e.g. "context_length_exceeded"
	ErrorMessage string
	Text         string // streamed in Deltas deltas (0: 3)
	Deltas       int
	// Gap is a pause before each delta after the first (a slow stream).
	Gap       time.Duration
	ToolCalls []ToolCall
	// Usage is reported in the final chunk when the client asked for it;
	// nil reports estimates (prompt chars/4, completion chars/4).
	Usage *goopenai.Usage
	// NoUsage leaves usage out even when asked for.
	NoUsage bool
	// Hold, when set, delays the answer until it is closed or the client
	// goes away (counted by Cancelled).
	Hold <-chan struct{}
	// Delay is how long the model "thinks" before it answers (after Hold);
	// a client that goes away meanwhile is counted by Cancelled.
	Delay time.Duration
}

// ReplyFunc scripts the answer to the n-th request (n counts from 0).
type ReplyFunc func(n int, r Request) Reply

// Server is the fake.
type Server struct {
	*httptest.Server

	mu        sync.Mutex // guards the fields below
	requests  []Request
	calls     int  // chat completion requests served, recorded or not
	forget    bool // Forget: requests are counted, not kept
	reply     ReplyFunc
	cancelled int
	keys      keyState // SetKey (keys.go)

	audio audioState // /audio/transcriptions (audio.go)
}

// DefaultReply answers "reply: <last user text>".
func DefaultReply(_ int, r Request) Reply { return Reply{Text: "reply: " + r.LastUserText()} }

// NewServer starts a fake answering with DefaultReply, closed when t ends.
func NewServer(t testing.TB) *Server {
	s := New()
	t.Cleanup(s.Close)
	return s
}

// New starts a fake answering with DefaultReply; the caller must Close it.
func New() *Server {
	s := &Server{reply: DefaultReply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is what to configure as the provider's baseURL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// ProviderConfig is an openai provider configuration pointing at the fake.
func (s *Server) ProviderConfig() llm.ProviderConfig {
	return llm.ProviderConfig{Type: llm.TypeOpenAI, BaseURL: s.BaseURL(), APIKey: "sk-fake"}
}

// SetReply replaces the script.
func (s *Server) SetReply(fn ReplyFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = fn
}

// Script answers the given replies in order, then DefaultReply.
func (s *Server) Script(replies ...Reply) {
	s.SetReply(func(n int, r Request) Reply {
		if n < len(replies) {
			return replies[n]
		}
		return DefaultReply(n, r)
	})
}

// Requests returns a copy of the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Forget stops keeping requests: Requests returns only those that came
// before, Calls still counts every one. A long benchmark calls it so that
// the fake's memory (and its collector's CPU, on cores the daemon shares)
// does not grow with every request it has seen.
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Calls counts the chat completion requests served so far, kept or not.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Cancelled counts held requests whose client went away.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/audio/transcriptions") {
		s.transcribe(w, r)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var body goopenai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "bad JSON: "+err.Error())
		return
	}
	req := Request{Body: body, Header: r.Header.Clone(), Path: r.URL.Path}
	s.mu.Lock()
	n := s.calls
	s.calls++
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	fn := s.reply
	// The request leaves the count before its last byte is written: the
	// client cannot start its next request while this one still counts.
	exit := sync.OnceFunc(s.enterLocked(n, req))
	s.mu.Unlock()
	defer exit()
	rep := fn(n, req)
	if !s.hold(r, rep) {
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		if rep.RetryAfter != "" {
			w.Header().Set("Retry-After", rep.RetryAfter)
		}
		msg := rep.ErrorMessage
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		exit()
		writeError(w, rep.Status, rep.ErrorCode, "api_error", msg)
		return
	}
	if !body.Stream {
		writeError(w, http.StatusBadRequest, "", "invalid_request_error", "the fake only streams")
		return
	}
	s.stream(w, body, rep, exit)
}

// hold waits out rep.Hold, then rep.Delay; false means the client went
// away meanwhile (counted by Cancelled).
func (s *Server) hold(r *http.Request, rep Reply) bool {
	if rep.Hold != nil {
		select {
		case <-rep.Hold:
		case <-r.Context().Done():
			s.cancel()
			return false
		}
	}
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			s.cancel()
			return false
		}
	}
	return true
}

func (s *Server) cancel() {
	s.mu.Lock()
	s.cancelled++
	s.mu.Unlock()
}

func writeError(w http.ResponseWriter, status int, code, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": c}})
}

// stream writes rep as SSE chunks; it calls exit before the last one.
func (s *Server) stream(w http.ResponseWriter, body goopenai.ChatCompletionRequest, rep Reply, exit func()) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	deltas := rep.Deltas
	if deltas <= 0 {
		deltas = 3
	}
	for i, part := range pieces(rep.Text, deltas) {
		if i > 0 && rep.Gap > 0 {
			time.Sleep(rep.Gap)
		}
		send(chunk(map[string]any{"content": part}, nil))
	}
	for i, tc := range rep.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, frag := range pieces(tc.Arguments, 3) {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	send(chunk(map[string]any{}, finish))
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage && !rep.NoUsage {
		u := rep.Usage
		if u == nil {
			var in int
			for _, m := range body.Messages {
				in += len(m.Content)
			}
			out := len(rep.Text)
			for _, tc := range rep.ToolCalls {
				out += len(tc.Arguments)
			}
			u = &goopenai.Usage{PromptTokens: in/4 + 1, CompletionTokens: out/4 + 1}
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": body.Model,
			"choices": []any{}, "usage": u})
	}
	exit()
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// pieces cuts s into up to n parts on rune boundaries.
func pieces(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
