package configs

import "testing"

// TestMaxRetriesZeroMeansZero: `maxRetries: 0` in YAML turns retries off;
// only a provider that says nothing gets the default (issue 27: 0 used to
// mean "the default 3").
func TestMaxRetriesZeroMeansZero(t *testing.T) {
	c, err := LoadBytes([]byte(`
providers:
  none: {type: openai, maxRetries: 0}
  two: {type: openai, maxRetries: 2}
  unset: {type: openai}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"none": 0, "two": 2, "unset": 3} {
		if got := c.Providers[name].Retries(); got != want {
			t.Errorf("providers.%s retries = %d, want %d", name, got, want)
		}
	}
	c, err = LoadBytes(nil, []string{"GATEWAY_PROVIDERS_ENVP_TYPE=openai", "GATEWAY_PROVIDERS_ENVP_MAX_RETRIES=0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Providers["envp"].Retries(); got != 0 {
		t.Errorf("GATEWAY_PROVIDERS_ENVP_MAX_RETRIES=0: retries = %d, want 0", got)
	}
}
