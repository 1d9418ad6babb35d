// Package openai is the provider for OpenAI-compatible chat completions
// (OpenAI, Ollama, vLLM, OpenRouter, LM Studio...). It speaks the chat
// completions wire protocol itself (request.go writes the body by hand,
// stream.go reads the server-sent events): the SDK's reflection over the
// whole history on every call was the daemon's largest CPU cost (issue
// 21). It streams with stream_options.include_usage, assembles streamed
// tool calls by index, retries 429/5xx with backoff (honouring
// Retry-After) and reports context-window overflows as
// llm.ErrContextOverflow. Transcription (transcribe.go) still goes
// through github.com/sashabaranov/go-openai.
//
// A Provider is safe for concurrent use.
package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	url     string           // <baseURL>/chat/completions
	auth    string           // Authorization header value; "" for no key
	doer    llm.HTTPDoer     // retries over the configured client
	audio   *goopenai.Client // transcriptions (transcribe.go)
	timeout time.Duration
	vision  []string // ProviderConfig.VisionModels
	log     *zap.Logger
	now     func() time.Time
	// noEffort: models that refused reasoning_effort (effort.go).
	noEffort noEffort
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
	baseURL := DefaultBaseURL
	if c.Provider.BaseURL != "" {
		baseURL = c.Provider.BaseURL
	}
	doer := &llm.RetryClient{Base: base, MaxRetries: c.Provider.Retries(), BaseDelay: c.RetryBaseDelay, Logger: log}
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = baseURL
	cfg.HTTPClient = doer
	now := c.Now
	if now == nil {
		now = time.Now
	}
	p := &Provider{
		name: c.Name, url: strings.TrimRight(baseURL, "/") + "/chat/completions", doer: doer,
		audio: goopenai.NewClientWithConfig(cfg), timeout: c.Provider.Timeout(), log: log, now: now, vision: c.Provider.VisionModels,
	}
	if key != "" {
		p.auth = "Bearer " + key
	}
	return p, nil
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
	resp, err := p.sendWithEffort(ctx, req)
	if err != nil {
		return sessions.Message{}, wrapErr("chat completion", err)
	}
	defer resp.Body.Close()
	sr := newStreamReader(resp.Body)
	defer sr.close()
	var acc accumulator
	var c chunk // reused: one allocation for the whole stream
	for {
		c.reset()
		err := sr.next(&c)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sessions.Message{}, wrapErr("chat completion stream", err)
		}
		if d := acc.add(&c); d != "" && fn != nil {
			fn(llm.Event{TextDelta: d})
		}
	}
	switch {
	case acc.finish == "error":
		return sessions.Message{}, wrapErr("chat completion stream", errors.New(`the answer ended with finish_reason "error"`))
	case acc.finish == "" && !sr.done:
		return sessions.Message{}, wrapErr("chat completion stream", sr.cutShort())
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

// send posts the request and returns the response of a 2xx answer (its
// body is the stream); any other answer is read into an *APIError or a
// *RequestError.
func (p *Provider) send(ctx context.Context, req llm.Request) (*http.Response, error) {
	if len(req.Tools) > maxTools {
		// The API refuses the whole request ("array too long"); the
		// built-in tools come first, the MCP servers' last.
		p.log.Warn("tools left out of the request: the API takes at most 128 (narrow the agent's MCP tools with tools.allow or mcp.servers.<name>.tools)",
			zap.Int("offered", len(req.Tools)), zap.String("first_left_out", req.Tools[maxTools].Name))
		req.Tools = req.Tools[:maxTools]
	}
	body := newRequestBody()
	defer body.release() // readers net/http still holds keep the buffer
	if err := encodeRequest(body.buf, req); err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	size := int64(body.buf.Len())
	rc, err := body.open()
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	hreq.ContentLength = size
	hreq.GetBody = body.open
	h := hreq.Header
	if p.auth != "" {
		h.Set("Authorization", p.auth)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	resp, err := p.doer.Do(hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		defer resp.Body.Close()
		return nil, statusError(resp)
	}
	return resp, nil
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
