package agents

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
)

func TestNewProviders(t *testing.T) {
	ps, err := NewProviders(map[string]llm.ProviderConfig{
		"local":  {Type: "echo"},
		"openai": {Type: "openai", APIKey: "k"},
		"claude": {Type: "anthropic", APIKey: "k", BaseURL: "http://127.0.0.1:1"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range ps {
		if p.Name() != name {
			t.Errorf("provider %q reports name %q", name, p.Name())
		}
	}
	if len(ps) != 3 {
		t.Fatalf("%d providers", len(ps))
	}
	_, err = NewProviders(map[string]llm.ProviderConfig{"bad": {Type: "gemini"}, "worse": {}}, nil)
	if err == nil || !strings.Contains(err.Error(), "providers.bad") || !strings.Contains(err.Error(), "providers.worse") {
		t.Fatalf("err = %v, want both providers named", err)
	}
}
