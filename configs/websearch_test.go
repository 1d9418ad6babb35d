package configs

import (
	"strings"
	"testing"
	"time"
)

func TestLoadWebSearch(t *testing.T) {
	c, err := LoadBytes([]byte(`
webSearch: {provider: brave, maxResults: 8, timeout: 5s}
agents:
  list:
    - id: main
      tools: {allow: [web_search]}
`), []string{"GATEWAY_WEB_SEARCH_API_KEY_ENV=MY_BRAVE"})
	if err != nil {
		t.Fatal(err)
	}
	if w := c.WebSearch; w.Provider != "brave" || w.MaxResults != 8 || w.Timeout != 5*time.Second || w.APIKeyEnv != "MY_BRAVE" {
		t.Fatalf("webSearch = %+v", w)
	}
	if d := Default().WebSearch; d.Enabled() {
		t.Fatalf("web search on by default: %+v", d)
	}
	for name, tc := range map[string]struct{ yaml, want string }{
		"allowed without provider": {"agents: {list: [{id: main, tools: {allow: [web_search]}}]}",
			"agents.list[0].tools.allow: names web_search, but webSearch.provider is not set"},
		"unknown provider":    {"webSearch: {provider: google}", `webSearch.provider: "google": want searxng or brave`},
		"searxng without url": {"webSearch: {provider: searxng}", "webSearch.baseURL: required for searxng"},
		"too many results":    {"webSearch: {provider: brave, maxResults: 100}", "webSearch.maxResults 100: want 1..20"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
