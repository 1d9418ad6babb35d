package configs

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
)

// TestModelContextWindowKey: providers.<p>.models.<m>.contextWindow loads
// into the runner's per-model windows; a negative one, or one at or below
// agents.defaults.compaction.reserveTokens, is refused naming the key.
func TestModelContextWindowKey(t *testing.T) {
	c, err := LoadBytes([]byte(`
providers:
  oa:
    type: openai
    models:
      gpt-4.1: {contextWindow: 1000000}
      gpt-4o-mini: {price: {input: 0.15}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := agents.ContextWindowsFrom(c.Providers)
	if w["oa/gpt-4.1"] != 1000000 || len(w) != 1 {
		t.Fatalf("windows = %v, want only oa/gpt-4.1: 1000000", w)
	}
	for yaml, key := range map[string]string{
		"providers: {oa: {type: openai, models: {m1: {contextWindow: -1}}}}":    "providers.oa.models.m1.contextWindow -1",
		"providers: {oa: {type: openai, models: {m1: {contextWindow: 20000}}}}": "providers.oa.models.m1.contextWindow 20000: must be above agents.defaults.compaction.reserveTokens 20000",
	} {
		if _, err := LoadBytes([]byte(yaml), nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want it to name %q", yaml, err, key)
		}
	}
}
