package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/internal/httpclient"
)

// benchAnswer is a streamed answer as the fake model sends it: a role
// chunk, ten text deltas, the finish and the usage chunk.
func benchAnswer() string {
	var b strings.Builder
	chunk := func(delta, finish string) {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	for i := range 10 {
		chunk(fmt.Sprintf(`{"content":"word %d of the answer "}`, i), "null")
	}
	chunk(`{}`, `"stop"`)
	b.WriteString(`data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":2400,"completion_tokens":40,"total_tokens":2440}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// benchServer reads each request and answers benchAnswer.
func benchServer(b *testing.B) *httptest.Server {
	answer := benchAnswer()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, answer)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkStream40 is one call with a 40-message history: encode, send,
// read the stream, assemble the answer (client and fake server in one
// process, so the figures include the fake's share).
func BenchmarkStream40(b *testing.B) {
	srv := benchServer(b)
	p, err := New(Config{Name: "openai", Provider: llm.ProviderConfig{Type: "openai", BaseURL: srv.URL, APIKey: "sk-bench"}})
	if err != nil {
		b.Fatal(err)
	}
	req := history40()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		msg, err := p.Stream(ctx, req, nil)
		if err != nil || !strings.HasPrefix(msg.Text(), "word 0") {
			b.Fatalf("%q, %v", msg.Text(), err)
		}
	}
}

// BenchmarkStream40GoOpenAI is the same call through go-openai, as the
// provider made it before (request built, streamed, deltas collected).
func BenchmarkStream40GoOpenAI(b *testing.B) {
	srv := benchServer(b)
	cfg := goopenai.DefaultConfig("sk-bench")
	cfg.BaseURL = srv.URL
	cfg.HTTPClient = &llm.RetryClient{Base: httpclient.New(), MaxRetries: 2}
	client := goopenai.NewClientWithConfig(cfg)
	req := history40()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		stream, err := client.CreateChatCompletionStream(ctx, goOpenAIRequest(req))
		if err != nil {
			b.Fatal(err)
		}
		var text strings.Builder
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if len(chunk.Choices) > 0 {
				text.WriteString(chunk.Choices[0].Delta.Content)
			}
		}
		stream.Close()
		if !strings.HasPrefix(text.String(), "word 0") {
			b.Fatalf("%q", text.String())
		}
	}
}
