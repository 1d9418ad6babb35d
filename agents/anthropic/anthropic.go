// Package anthropic is the provider for the Anthropic Messages API, built on
// github.com/anthropics/anthropic-sdk-go. It streams (Messages.NewStreaming
// with Message.Accumulate), maps tool calls to tool_use/tool_result blocks,
// retries 429/5xx with backoff honouring Retry-After (the SDK's own retries
// are off so both providers behave alike) and reports "prompt is too long"
// as llm.ErrContextOverflow. The SDK's ANTHROPIC_* environment defaults are
// not used: the key comes from the provider config (apiKeyEnv defaults to
// ANTHROPIC_API_KEY).
//
// A Provider is safe for concurrent use.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/internal/httpclient"
	"github.com/gateway/gateway/sessions"
)

// DefaultMaxTokens is the answer budget when the request sets none (the
// Messages API requires one).
const DefaultMaxTokens = 8192

// Config configures a Provider.
type Config struct {
	Name     string // configured provider name, e.g. "anthropic"
	Provider llm.ProviderConfig
	Logger   *zap.Logger
	Getenv   func(string) string // nil: os.Getenv
	// HTTPClient carries the requests (nil: a plain http.Client); retries
	// are layered on top of it.
	HTTPClient     llm.HTTPDoer
	RetryBaseDelay time.Duration // first backoff (0: 500ms)
	Now            func() time.Time
}

// Validate checks c.
func (c Config) Validate() error {
	if c.Name == "" {
		return errors.New("anthropic: name: missing")
	}
	if c.Provider.Type != llm.TypeAnthropic {
		return fmt.Errorf("anthropic: type %q: want anthropic", c.Provider.Type)
	}
	if err := c.Provider.Validate(); err != nil {
		return fmt.Errorf("anthropic: %w", err)
	}
	return nil
}

// Provider calls the Anthropic Messages API.
type Provider struct {
	name    string
	client  sdk.Client
	timeout time.Duration
	vision  []string // ProviderConfig.VisionModels
	now     func() time.Time
	log     *zap.Logger
	// noThinking: models that refused a thinking budget (thinking.go).
	noThinking sync.Map // model name -> struct{}
}

var _ llm.Provider = (*Provider)(nil)

// New builds a Provider; it resolves the API key but makes no request.
func New(c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	key, err := c.Provider.ResolveAPIKey("ANTHROPIC_API_KEY", c.Getenv)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
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
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&llm.RetryClient{Base: base, MaxRetries: c.Provider.Retries(), BaseDelay: c.RetryBaseDelay, Logger: log}),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	if c.Provider.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.Provider.BaseURL))
	}
	for k, v := range c.Provider.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{name: c.Name, client: sdk.NewClient(opts...), timeout: c.Provider.Timeout(), now: now, vision: c.Provider.VisionModels,
		log: log}, nil
}

// TakesImages implements llm.ImageTaker (providers.<name>.visionModels).
func (p *Provider) TakesImages(model string) bool {
	return llm.ProviderConfig{VisionModels: p.vision}.TakesImages(model)
}

// Thinks implements llm.Thinker: the Messages API takes a thinking
// budget (llm.ThinkingBudget).
func (p *Provider) Thinks() bool { return true }

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Stream runs one streaming Messages call (asked once more without the
// thinking budget when the model refuses one: thinking.go).
func (p *Provider) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if llm.ThinkingBudget(req.Thinking) > 0 && p.refusedThinking(req.Model) {
		req.Thinking = sessions.ThinkingOff
	}
	msg, err := p.stream(ctx, req, fn)
	if err != nil && llm.ThinkingBudget(req.Thinking) > 0 && refusesThinking(err) {
		level := req.Thinking
		req.Thinking = sessions.ThinkingOff
		if msg, err = p.stream(ctx, req, fn); err == nil {
			p.noteNoThinking(req.Model, level) // only a model that answered without it
		}
	}
	return msg, err
}

func (p *Provider) stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
		Messages:  toMessages(req.Messages),
		Tools:     toTools(req.Tools),
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if budget := llm.ThinkingBudget(req.Thinking); budget > 0 {
		// max_tokens counts the thinking: it must exceed the budget.
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		if params.MaxTokens <= budget {
			params.MaxTokens = budget + DefaultMaxTokens
		}
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var acc sdk.Message
	stopped := false // message_stop was read
	for stream.Next() {
		ev := stream.Current()
		stopped = stopped || ev.Type == "message_stop"
		if err := acc.Accumulate(ev); err != nil {
			return sessions.Message{}, fmt.Errorf("anthropic: messages stream: %w", err)
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" && fn != nil {
			fn(llm.Event{TextDelta: ev.Delta.Text})
		}
	}
	if err := stream.Err(); err != nil {
		return sessions.Message{}, wrapErr(err)
	}
	if !stopped {
		// The connection closed mid-answer (or the body was no stream):
		// what was read is no complete answer.
		return sessions.Message{}, fmt.Errorf("anthropic: messages: %w", errCutShort)
	}
	msg := fromMessage(acc)
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

func wrapErr(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusBadRequest || apiErr.StatusCode == http.StatusRequestEntityTooLarge) &&
		llm.IsContextOverflowText(apiErr.RawJSON()+" "+apiErr.Error()) {
		return fmt.Errorf("anthropic: messages: %w: %w", llm.ErrContextOverflow, err)
	}
	if apiErr != nil {
		status := apiErr.StatusCode
		if status >= 200 && status < 300 {
			// An error event in a stream that began 200.
			status = streamErrorStatus(apiErr.RawJSON())
		}
		err = llm.WithStatus(status, err)
	}
	return fmt.Errorf("anthropic: messages: %w", err)
}

var errCutShort = errors.New("stream ended before message_stop: the answer is incomplete")

// streamErrorStatus is the HTTP status the Messages API gives the error
// type of an error event sent mid-stream ({"type":"error","error":{"type":
// "overloaded_error",...}}), so the failover layer weighs it as it would
// the same error answered before the stream: overloaded and api errors
// are the provider's trouble. 0 (unknown, also the provider's) for a type
// it does not list.
func streamErrorStatus(raw string) int {
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &e)
	switch e.Error.Type {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return 0
}
