package websearch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSearXNG answers /search?q=…&format=json as a SearXNG instance with
// json enabled does (403 for any other format).
func fakeSearXNG(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/search" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"query": q, "number_of_results": 0,
			"results": []map[string]any{
				{"url": "https://go.dev/doc/", "title": "Documentation - The Go\nProgramming Language", "content": "Docs about " + q,
					"engine": "duckduckgo", "engines": []string{"duckduckgo"}, "score": 1.5, "category": "general", "publishedDate": nil},
				{"url": "javascript:alert(1)", "title": "not citable", "content": "x"},
				{"url": "https://pkg.go.dev/", "title": "Go Packages", "content": "find packages", "publishedDate": "2026-01-02T00:00:00"},
				{"url": "https://example.org/3", "title": "third", "content": ""},
			},
			"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []string{"golang"}, "unresponsive_engines": []any{},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeBrave answers /res/v1/web/search as the Brave Search API does:
// the key in X-Subscription-Token, 401 with an ErrorResponse without it.
func fakeBrave(t *testing.T, key string, gotCount *atomic.Value) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/res/v1/web/search" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Header.Get("X-Subscription-Token") != key {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"type": "ErrorResponse", "error": map[string]any{
				"id": "c1", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.", "meta": map[string]any{}},
				"time": 1700000000})
			return
		}
		if gotCount != nil {
			gotCount.Store(r.URL.Query().Get("count"))
		}
		q := r.URL.Query().Get("q")
		json.NewEncoder(w).Encode(map[string]any{
			"type":  "search",
			"query": map[string]any{"original": q, "more_results_available": true},
			"mixed": map[string]any{"type": "mixed", "main": []any{}},
			"web": map[string]any{"type": "search", "family_friendly": true, "results": []map[string]any{
				{"type": "search_result", "title": "Brave result about " + q, "url": "https://brave.example/a",
					"description": "the <strong>" + q + "</strong> page", "age": "2 days ago", "page_age": "2026-11-27T10:00:00", "language": "en"},
				{"type": "search_result", "title": "Second", "url": "https://brave.example/b", "description": "more"},
			}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSearXNG(t *testing.T) {
	var calls atomic.Int32
	srv := fakeSearXNG(t, &calls)
	s, err := New(Config{Provider: ProviderSearXNG, BaseURL: srv.URL + "/"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Search(context.Background(), Query{Text: "  go docs ", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Title: "Documentation - The Go Programming Language", URL: "https://go.dev/doc/", Snippet: "Docs about go docs"},
		{Title: "Go Packages", URL: "https://pkg.go.dev/", Snippet: "find packages", Published: "2026-01-02T00:00:00"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

func TestBrave(t *testing.T) {
	var count atomic.Value
	srv := fakeBrave(t, "k-123", &count)
	env := map[string]string{"MY_BRAVE": "k-123"}
	s, err := New(Config{Provider: ProviderBrave, BaseURL: srv.URL, APIKeyEnv: "MY_BRAVE", MaxResults: 4},
		Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Search(context.Background(), Query{Text: "gophers"})
	if err != nil {
		t.Fatal(err)
	}
	if count.Load() != "4" {
		t.Errorf("count sent = %v, want 4 (maxResults)", count.Load())
	}
	want := []Result{
		{Title: "Brave result about gophers", URL: "https://brave.example/a", Snippet: "the gophers page", Published: "2026-11-27T10:00:00"},
		{Title: "Second", URL: "https://brave.example/b", Snippet: "more"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

func TestBraveErrors(t *testing.T) {
	srv := fakeBrave(t, "right", nil)
	s, err := New(Config{Provider: ProviderBrave, BaseURL: srv.URL, APIKey: "wrong"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(context.Background(), Query{Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "brave: HTTP 401: SUBSCRIPTION_TOKEN_INVALID") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("error = %v, want the status and code, never the key", err)
	}
	if _, err := New(Config{Provider: ProviderBrave, BaseURL: srv.URL}, Options{Getenv: func(string) string { return "" }}); err == nil ||
		!strings.Contains(err.Error(), "BRAVE_API_KEY") {
		t.Errorf("New without a key = %v, want an error naming BRAVE_API_KEY", err)
	}
}

func TestOffByDefault(t *testing.T) {
	s, err := New(Config{}, Options{})
	if s != nil || err != nil {
		t.Errorf("New(zero config) = %v, %v; want nil, nil (off)", s, err)
	}
}

func TestLimits(t *testing.T) {
	var calls atomic.Int32
	srv := fakeSearXNG(t, &calls)
	s, err := New(Config{Provider: ProviderSearXNG, BaseURL: srv.URL, RatePerMinute: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{"", "   ", strings.Repeat("x", MaxQueryChars+1)} {
		if _, err := s.Search(ctx, Query{Text: q}); err == nil || !strings.Contains(err.Error(), "query:") {
			t.Errorf("Search(%.10q) = %v, want a query error", q, err)
		}
	}
	for i := range 2 {
		if _, err := s.Search(ctx, Query{Text: "a"}); err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
	}
	if _, err := s.Search(ctx, Query{Text: "a"}); err != ErrRate {
		t.Errorf("third search in a minute = %v, want ErrRate", err)
	}
	if calls.Load() != 2 {
		t.Errorf("provider called %d times, want 2 (refused queries never reach it)", calls.Load())
	}
}

func TestProviderFailures(t *testing.T) {
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"results":[` + strings.Repeat(" ", MaxBytes) + `]}`))
	}))
	t.Cleanup(big.Close)
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden", http.StatusForbidden) // json not in search.formats
	}))
	t.Cleanup(notJSON.Close)
	for name, tc := range map[string]struct{ url, want string }{
		"too big":   {big.URL, "searxng: response larger than 1024 KiB"},
		"forbidden": {notJSON.URL, "searxng: HTTP 403"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(Config{Provider: ProviderSearXNG, BaseURL: tc.url}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Search(context.Background(), Query{Text: "x"}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		c    Config
		want string
	}{
		"unknown provider":  {Config{Provider: "bing"}, `provider: "bing"`},
		"searxng needs url": {Config{Provider: ProviderSearXNG}, "baseURL: required"},
		"bad url":           {Config{Provider: ProviderSearXNG, BaseURL: "file:///etc"}, "want an absolute http(s) URL"},
		"too many results":  {Config{Provider: ProviderBrave, MaxResults: 50}, "maxResults 50"},
		"key and file":      {Config{Provider: ProviderBrave, APIKey: "a", APIKeyFile: "/x"}, "set only one"},
		"negative per turn": {Config{Provider: ProviderBrave, MaxPerTurn: -1}, "maxPerTurn -1"},
		"negative rate":     {Config{Provider: ProviderBrave, RatePerMinute: -1}, "ratePerMinute -1"},
		"negative timeout":  {Config{Provider: ProviderBrave, Timeout: -1}, "timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.c.WithDefaults().Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Errorf("off config: %v", err)
	}
}
