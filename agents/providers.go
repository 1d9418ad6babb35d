package agents

import (
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/anthropic"
	"github.com/gateway/gateway/agents/echo"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
)

// NewProviders builds every configured provider (the `providers:` map),
// keyed by its name. Errors name the provider; nothing is contacted.
func NewProviders(cfg map[string]llm.ProviderConfig, log *zap.Logger) (map[string]llm.Provider, error) {
	if log == nil {
		log = zap.NewNop()
	}
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]llm.Provider, len(cfg))
	var errs []error
	for _, name := range names {
		p, err := newProvider(name, cfg[name], log)
		if err != nil {
			errs = append(errs, fmt.Errorf("providers.%s: %w", name, err))
			continue
		}
		out[name] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func newProvider(name string, c llm.ProviderConfig, log *zap.Logger) (llm.Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Type {
	case llm.TypeEcho:
		return echo.New(echo.Config{Name: name, Provider: c})
	case llm.TypeOpenAI:
		return openai.New(openai.Config{Name: name, Provider: c, Logger: log})
	case llm.TypeAnthropic:
		return anthropic.New(anthropic.Config{Name: name, Provider: c, Logger: log})
	}
	return nil, fmt.Errorf("type %q: not supported", c.Type)
}
