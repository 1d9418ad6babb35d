// Package anthropictest is a fake Anthropic Messages API for tests of other
// packages: it speaks the streaming protocol (SSE events message_start,
// content_block_start/delta/stop, message_delta, message_stop), records
// every request body and answers "reply: <last user text>".
//
// A Server is safe for concurrent use; it is closed by t.Cleanup.
package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gateway/gateway/agents/llm"
)

// Block is one content block of a recorded request message.
type Block struct {
	Type   string `json:"type"`
	Text   string `json:"text,omitempty"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source,omitempty"`
}

// Message is one message of a recorded request.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Request is one recorded Messages request.
type Request struct {
	Model    string    `json:"model"`
	System   any       `json:"system"`
	Messages []Message `json:"messages"`
}

// LastUser is the last user message.
func (r Request) LastUser() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu       sync.Mutex // guards requests
	requests []Request
}

// NewServer starts a fake.
func NewServer(t testing.TB) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// ProviderConfig is an anthropic provider configuration pointing at the fake.
func (s *Server) ProviderConfig() llm.ProviderConfig {
	return llm.ProviderConfig{Type: llm.TypeAnthropic, BaseURL: s.URL, APIKey: "sk-ant-fake"}
}

// Requests returns a copy of the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.NotFound(w, r)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	var text strings.Builder
	for _, b := range req.LastUser().Content {
		text.WriteString(b.Text)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 42, "output_tokens": 1},
	}})
	ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": "reply: " + text.String()}})
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 9}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}
