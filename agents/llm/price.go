package llm

import (
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// ModelConfig is one entry of providers.<name>.models: what the gateway
// knows about a model of that provider.
type ModelConfig struct {
	Price Price `mapstructure:"price"`
	// ContextWindow is the model's context window in tokens (0: not
	// set; the agent's or agents.defaults' contextWindow applies).
	ContextWindow int `mapstructure:"contextWindow"`
}

// Price is a model's price in USD per million tokens, by token kind.
type Price struct {
	Input      float64 `mapstructure:"input"`
	Output     float64 `mapstructure:"output"`
	CacheRead  float64 `mapstructure:"cacheRead"`
	CacheWrite float64 `mapstructure:"cacheWrite"`
}

// Validate refuses negative prices; the error names the key.
func (p Price) Validate() error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"input", p.Input}, {"output", p.Output}, {"cacheRead", p.CacheRead}, {"cacheWrite", p.CacheWrite}} {
		if f.v < 0 || f.v != f.v { // f.v != f.v: NaN
			return fmt.Errorf("%s %v: must be a non-negative number (USD per million tokens)", f.key, f.v)
		}
	}
	return nil
}

// Cost prices u: each token count times its price per million. Input is
// the uncached prompt tokens as providers report them (cache reads and
// writes are counted apart), as in pi.
func (p Price) Cost(u sessions.Usage) sessions.Cost {
	const million = 1e6
	c := sessions.Cost{
		Input:      float64(u.Input) * p.Input / million,
		Output:     float64(u.Output) * p.Output / million,
		CacheRead:  float64(u.CacheRead) * p.CacheRead / million,
		CacheWrite: float64(u.CacheWrite) * p.CacheWrite / million,
	}
	c.Total = c.Input + c.Output + c.CacheRead + c.CacheWrite
	return c
}

func validateModels(models map[string]ModelConfig) error {
	for name, m := range models {
		if name == "" {
			return fmt.Errorf("models: empty model name")
		}
		if err := m.Price.Validate(); err != nil {
			return fmt.Errorf("models.%s.price.%w", name, err)
		}
		if m.ContextWindow < 0 {
			return fmt.Errorf("models.%s.contextWindow %d: must not be negative (0: the agent's contextWindow)", name, m.ContextWindow)
		}
	}
	return nil
}
