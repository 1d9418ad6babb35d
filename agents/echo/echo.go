// Package echo is the offline provider (`type: echo`): it answers
// "echo: <last user text>" without any network or API key, so the daemon
// runs out of the box. Its replies are labelled "echo:" and its model is
// reported as "echo", so nobody mistakes it for a real model.
//
// A Provider is stateless and safe for concurrent use.
package echo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Config configures the echo provider.
type Config struct {
	Name     string // configured provider name, e.g. "local"
	Provider llm.ProviderConfig
	Now      func() time.Time // nil: time.Now
}

// Validate checks c.
func (c Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("echo: name: missing")
	}
	if c.Provider.Type != "" && c.Provider.Type != llm.TypeEcho {
		return fmt.Errorf("echo: type %q: want echo", c.Provider.Type)
	}
	return nil
}

// Provider is the echo provider.
type Provider struct {
	name string
	now  func() time.Time
}

var _ llm.Provider = (*Provider)(nil)

// New returns an echo provider.
func New(c Config) (*Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{name: c.Name, now: now}, nil
}

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Stream replies "echo: <text of the last user message>" in a few deltas.
func (p *Provider) Stream(ctx context.Context, req llm.Request, fn func(llm.Event)) (sessions.Message, error) {
	var last string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == sessions.RoleUser {
			last = req.Messages[i].Text()
			break
		}
	}
	reply := "echo: " + strings.TrimSpace(last)
	for _, part := range split(reply, 3) {
		if err := ctx.Err(); err != nil {
			return sessions.Message{}, fmt.Errorf("echo: stream: %w", err)
		}
		if fn != nil {
			fn(llm.Event{TextDelta: part})
		}
	}
	in, out := llm.EstimateRequest(req), llm.EstimateText(reply)
	model := req.Model
	if model == "" {
		model = "echo"
	}
	return sessions.Message{
		Role:       sessions.RoleAssistant,
		Content:    []sessions.Content{{Type: sessions.BlockText, Text: reply}},
		Provider:   p.name,
		Model:      model,
		Usage:      &sessions.Usage{Input: in, Output: out, TotalTokens: in + out},
		StopReason: llm.StopEnd,
		Timestamp:  p.now().UnixMilli(),
	}, nil
}

// split cuts s into at most n pieces on rune boundaries.
func split(s string, n int) []string {
	r := []rune(s)
	size := (len(r) + n - 1) / n
	if size == 0 {
		return nil
	}
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
