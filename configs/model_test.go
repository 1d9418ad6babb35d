package configs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/agents"
)

const fallbackProviders = "providers: {local: {type: echo}, oa: {type: openai, apiKey: k}, an: {type: anthropic, apiKey: k}}\n"

func TestModelForms(t *testing.T) {
	tests := map[string]struct {
		yaml     string
		defaults agents.Model
		agent0   agents.Model
	}{
		"string form (older configs)": {
			yaml:     "agents: {defaults: {model: oa/gpt-4.1}}\n",
			defaults: agents.Model{Primary: "oa/gpt-4.1"},
		},
		"primary and fallbacks": {
			yaml:     "agents: {defaults: {model: {primary: oa/gpt-4.1, fallbacks: [an/claude, local/echo]}}}\n",
			defaults: agents.Model{Primary: "oa/gpt-4.1", Fallbacks: []string{"an/claude", "local/echo"}},
		},
		"fallbacks alone keep the default primary": {
			yaml:     "agents: {defaults: {model: {fallbacks: [oa/gpt-4.1]}}}\n",
			defaults: agents.Model{Primary: "local/echo", Fallbacks: []string{"oa/gpt-4.1"}},
		},
		"per agent": {
			yaml:     "agents: {list: [{id: main, model: {primary: an/claude, fallbacks: [oa/gpt-4.1]}}]}\n",
			defaults: agents.Model{Primary: "local/echo"},
			agent0:   agents.Model{Primary: "an/claude", Fallbacks: []string{"oa/gpt-4.1"}},
		},
		"per agent string": {
			yaml:     "agents: {list: [{id: main, model: oa/gpt-4.1}]}\n",
			defaults: agents.Model{Primary: "local/echo"},
			agent0:   agents.Model{Primary: "oa/gpt-4.1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := LoadBytes([]byte(fallbackProviders+tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.defaults, c.Agents.Defaults.Model); diff != "" {
				t.Errorf("defaults.model (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.agent0, c.Agents.List[0].Model); diff != "" {
				t.Errorf("list[0].model (-want +got):\n%s", diff)
			}
		})
	}
}

func TestModelFallbackErrorsNameTheKey(t *testing.T) {
	tests := map[string]struct{ yaml, want string }{
		"unknown provider in defaults": {"agents: {defaults: {model: {primary: oa/x, fallbacks: [an/y, ghost/z]}}}\n",
			`agents.defaults.model.fallbacks[1]: provider "ghost" is not in providers`},
		"not provider/model": {"agents: {defaults: {model: {fallbacks: [gpt-4]}}}\n",
			`agents.defaults.model.fallbacks[0]: "gpt-4" is not provider/model`},
		"unknown provider per agent": {"agents: {list: [{id: main, model: {fallbacks: [nope/m]}}]}\n",
			`agents.list[0].model.fallbacks[0]: provider "nope"`},
		"bad primary": {"agents: {defaults: {model: {primary: ghost/m}}}\n",
			`agents.defaults.model: provider "ghost"`},
		"empty primary": {"agents: {defaults: {model: {primary: ''}}}\n", "agents.defaults.model"},
		"unknown key":   {"agents: {defaults: {model: {primary: oa/x, fallback: [an/y]}}}\n", "fallback"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes([]byte(fallbackProviders+tc.yaml), nil)
			if err == nil {
				t.Fatalf("accepted %q", tc.yaml)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func TestModelFromEnvironment(t *testing.T) {
	yaml := fallbackProviders + "agents: {defaults: {model: {primary: local/echo, fallbacks: [an/claude]}}}\n"
	c, err := LoadBytes([]byte(yaml), []string{"GATEWAY_AGENTS_DEFAULTS_MODEL=oa/gpt-4.1"})
	if err != nil {
		t.Fatal(err)
	}
	// The variable is the string form: the primary alone.
	if diff := cmp.Diff(agents.Model{Primary: "oa/gpt-4.1"}, c.Agents.Defaults.Model); diff != "" {
		t.Fatalf("defaults.model (-want +got):\n%s", diff)
	}
}
