package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// fakeModel answers OpenAI-compatible streaming chat completions after
// think (at once when zero), echoing the last user message.
type fakeModel struct{ think time.Duration }

func (m fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			switch c := m.Content.(type) {
			case string:
				last = c
			default:
				b, _ := json.Marshal(c)
				last = string(b)
			}
		}
	}
	text := "ack " + last
	if m.think > 0 {
		select {
		case <-time.After(m.think):
		case <-r.Context().Done():
			return
		}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "bench",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "bench",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}}}})
	chunk(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "bench",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	chunk(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "bench", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
