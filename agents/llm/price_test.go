package llm

import (
	"math"
	"strings"
	"testing"
)

func TestProviderConfigValidatesPrices(t *testing.T) {
	good := ProviderConfig{Type: TypeOpenAI, Models: map[string]ModelConfig{
		"gpt-4.1": {Price: Price{Input: 2, Output: 8, CacheRead: 0.5}}, "free": {}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	for name, tc := range map[string]struct {
		price Price
		want  string
	}{
		"negative input":       {Price{Input: -1}, "models.gpt-4.1.price.input -1: must be a non-negative number"},
		"negative output":      {Price{Output: -0.5}, "models.gpt-4.1.price.output -0.5"},
		"negative cache read":  {Price{CacheRead: -2}, "models.gpt-4.1.price.cacheRead -2"},
		"negative cache write": {Price{CacheWrite: -3}, "models.gpt-4.1.price.cacheWrite -3"},
		"NaN":                  {Price{Input: math.NaN()}, "models.gpt-4.1.price.input NaN"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ProviderConfig{Type: TypeOpenAI, Models: map[string]ModelConfig{"gpt-4.1": {Price: tc.price}}}
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
