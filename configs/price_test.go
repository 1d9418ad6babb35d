package configs

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
)

func TestLoadModelPrices(t *testing.T) {
	c, err := LoadBytes([]byte(`
providers:
  openai:
    type: openai
    models:
      gpt-4.1:
        price: {input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Providers["openai"].Models["gpt-4.1"].Price, (llm.Price{Input: 2, Output: 8, CacheRead: 0.5}); got != want {
		t.Fatalf("price of gpt-4.1 (a model name with a dot) = %+v, want %+v", got, want)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"negative":     {"price: {input: -1}", "providers.openai.models.gpt-4.1.price.input -1: must be a non-negative number"},
		"not a number": {"price: {output: lots}", "output"},
		"unknown key":  {"price: {inptu: 1}", "inptu"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes([]byte("providers:\n  openai:\n    type: openai\n    models:\n      gpt-4.1:\n        "+tc.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadBytes = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
