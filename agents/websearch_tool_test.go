package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/websearch"
	"github.com/gateway/gateway/sessions"
)

// searxngFake answers GET /search?q=…&format=json as a SearXNG instance.
func searxngFake(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		calls.Add(1)
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"query": q, "results": []map[string]any{
			{"url": "https://tides.example/today", "title": "Tide times for " + q, "content": "High tide 16:40", "engine": "bing"},
		}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWebSearchToolThroughTurn: the model searches four times in one turn
// with maxPerTurn 3; three searches reach the provider and their results
// carry the URLs, the fourth is an error result the model reads.
func TestWebSearchToolThroughTurn(t *testing.T) {
	var calls atomic.Int32
	srv := searxngFake(t, &calls)
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	s, err := websearch.New(websearch.Config{Provider: websearch.ProviderSearXNG, BaseURL: srv.URL, MaxPerTurn: 3}, websearch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.r.search = s
	h.r.agents["main"] = Agent{ID: "main", Tools: Tools{Allow: []string{"web_search"}}}
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			var offered bool
			for _, tl := range req.Tools {
				offered = offered || tl.Name == "web_search"
			}
			if !offered {
				t.Errorf("web_search not offered with tools.allow")
			}
		}
		if n < 4 {
			return assistantCall("c"+string(rune('1'+n)), "web_search", map[string]string{"query": "brest"}), nil
		}
		return assistantText("High tide at 16:40 (https://tides.example/today)."), nil
	}
	k := h.key("main", "1")
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("tide?")}}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("provider searched %d times, want 3 (maxPerTurn)", calls.Load())
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	var results []sessions.Message
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult {
			results = append(results, m)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d tool results", len(results))
	}
	for i, r := range results[:3] {
		if r.IsError || !strings.Contains(r.Text(), `"url":"https://tides.example/today"`) || !strings.Contains(r.Text(), "Cite the sources") {
			t.Errorf("result %d = %s, want the cited URL", i, r.Text())
		}
	}
	if last := results[3]; !last.IsError || !strings.Contains(last.Text(), "this turn's 3 searches are spent") {
		t.Errorf("fourth result = %s, want the per-turn budget error", last.Text())
	}
}

// TestWebSearchOffByDefault: without webSearch configured an agent that
// allows web_search is refused at start, and one that does not is never
// offered it.
func TestWebSearchOffByDefault(t *testing.T) {
	h := newHarness(t, Defaults{}, []Agent{{ID: "main"}}, nil)
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		for _, tl := range req.Tools {
			if tl.Name == "web_search" {
				t.Errorf("web_search offered by default")
			}
		}
		return assistantText("ok"), nil
	}
	if _, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Inputs: []sessions.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	_, err := newRunner(Options{Providers: map[string]llm.Provider{"fake": h.p}, Defaults: Defaults{Model: Model{Primary: "fake/m"}},
		Agents: []Agent{{ID: "main", Tools: Tools{Allow: []string{"web_search"}}}}})
	if err == nil || !strings.Contains(err.Error(), "webSearch.provider is not set") {
		t.Errorf("newRunner with web_search allowed and no provider = %v", err)
	}
}
