// Package openai is the provider for OpenAI-compatible chat completions
// (OpenAI, Ollama, vLLM, OpenRouter, LM Studio...), built on
// github.com/sashabaranov/go-openai. It streams with
// stream_options.include_usage, assembles streamed tool calls by index,
// retries 429/5xx with backoff (honouring Retry-After) and reports
// context-window overflows as llm.ErrContextOverflow.
//
// A Provider is safe for concurrent use.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/internal/httpclient"
	"github.com/gateway/gateway/sessions"
)

// DefaultBaseURL is the public OpenAI endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider.
type Config struct {
	Name     string // configured provider name, e.g. "openai"
	Provider llm.ProviderConfig
	Logger   *zap.Logger
	Getenv   func(string) string // nil: os.Getenv
	// HTTPClient carries the requests (nil: a plain http.Client); retries
	// are layered on top of it.
	HTTPClient llm.HTTPDoer
	// RetryBaseDelay is the first backoff (0: 500ms); tests shorten it.
	RetryBaseDelay time.Duration
	Now            func() time.Time
}

// Validate checks c.
func (c Config) Validate() error {
	if c.Name == "" {
		return errors.New("openai: name: missing")
	}
	if c.Provider.Type != llm.TypeOpenAI {
		return fmt.Errorf("openai: type %q: want openai", c.Provider.Type)
	}
	if err := c.Provider.Validate(); err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	return nil
}

// Provider calls an OpenAI-compatible chat completions endpoint.
type Provider struct {
	name    string
	client  *goopenai.Client
	timeout time.Duration
	vision  []string // ProviderConfig.VisionModels
	log     *zap.Logger
	now     func() time.Time
}

var _ llm.Provider = (*Provider)(nil)

// New builds a Provider; it resolves the API key but makes no request.
func New(c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	key, err := c.Provider.ResolveAPIKey("OPENAI_API_KEY", c.Getenv)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	log := c.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("provider", c.Name))
	base := c.HTTPClient
	if base == nil {
		base = httpclient.New()
	}
	if len(c.Provider.Headers) > 0 {
		base = headerDoer{base: base, headers: c.Provider.Headers}
	}
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = DefaultBaseURL
	if c.Provider.BaseURL != "" {
		cfg.BaseURL = c.Provider.BaseURL
	}
	cfg.HTTPClient = &llm.RetryClient{Base: base, MaxRetries: c.Provider.Retries(), BaseDelay: c.RetryBaseDelay, Logger: log}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{name: c.Name, client: goopenai.NewClientWithConfig(cfg), timeout: c.Provider.Timeout(), log: log, now: now, vision: c.Provider.VisionModels}, nil
}

// TakesImages implements llm.ImageTaker (providers.<name>.visionModels).
func (p *Provider) TakesImages(model string) bool {
	return llm.ProviderConfig{VisionModels: p.vision}.TakesImages(model)
}

// Thinks implements llm.Thinker: an OpenAI-compatible API takes
// reasoning_effort (for reasoning models).
func (p *Provider) Thinks() bool { return true }

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Stream runs one streaming chat completion.
func (p *Provider) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	creq := goopenai.ChatCompletionRequest{
		Model:         req.Model,
		Messages:      toMessages(req.System, req.Messages),
		Tools:         toTools(req.Tools),
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		MaxTokens:     req.MaxTokens,
		// "" (off, or no level set) leaves the field out.
		ReasoningEffort: llm.ReasoningEffort(req.Thinking),
	}
	stream, err := p.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return sessions.Message{}, wrapErr("chat completion", err)
	}
	defer stream.Close()
	var acc accumulator
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sessions.Message{}, wrapErr("chat completion stream", err)
		}
		if d := acc.add(chunk); d != "" && fn != nil {
			fn(llm.Event{TextDelta: d})
		}
	}
	msg := acc.message()
	if fn != nil {
		for i := range msg.Content {
			if msg.Content[i].Type == sessions.BlockToolCall {
				fn(llm.Event{ToolCall: &msg.Content[i]})
			}
		}
	}
	msg.Provider = p.name
	if msg.Model == "" {
		msg.Model = req.Model
	}
	msg.Timestamp = p.now().UnixMilli()
	return msg, nil
}

// wrapErr names the operation and marks context overflows.
func wrapErr(op string, err error) error {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		code, _ := apiErr.Code.(string)
		if apiErr.HTTPStatusCode == http.StatusBadRequest || apiErr.HTTPStatusCode == http.StatusRequestEntityTooLarge || apiErr.HTTPStatusCode == 0 {
			if code == "context_length_exceeded" || llm.IsContextOverflowText(apiErr.Message) {
				return fmt.Errorf("openai: %s: %w: %w", op, llm.ErrContextOverflow, err)
			}
		}
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusBadRequest && llm.IsContextOverflowText(string(reqErr.Body)) {
		return fmt.Errorf("openai: %s: %w: %w", op, llm.ErrContextOverflow, err)
	}
	switch {
	case apiErr != nil:
		err = llm.WithStatus(apiErr.HTTPStatusCode, err)
	case reqErr != nil:
		err = llm.WithStatus(reqErr.HTTPStatusCode, err)
	}
	return fmt.Errorf("openai: %s: %w", op, err)
}

type headerDoer struct {
	base    llm.HTTPDoer
	headers map[string]string
}

func (h headerDoer) Do(r *http.Request) (*http.Response, error) {
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.Do(r)
}
