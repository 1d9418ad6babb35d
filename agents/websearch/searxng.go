package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// SearXNG queries a SearXNG instance's JSON API:
// GET <BaseURL>/search?q=<query>&format=json. The instance answers 403 when
// json is not among its search.formats.
type SearXNG struct {
	BaseURL string
}

// Name is "searxng".
func (SearXNG) Name() string { return ProviderSearXNG }

type searxngResponse struct {
	Query   string `json:"query"`
	Results []struct {
		URL           string `json:"url"`
		Title         string `json:"title"`
		Content       string `json:"content"`
		PublishedDate string `json:"publishedDate"`
	} `json:"results"`
}

// Search runs q on the instance (its first results page).
func (s SearXNG) Search(ctx context.Context, client *http.Client, q Query) ([]Result, error) {
	u := strings.TrimRight(s.BaseURL, "/") + "/search?" + url.Values{"q": {q.Text}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("searxng: request: %w", err)
	}
	var body searxngResponse
	if err := getJSON(client, req, "searxng", &body, searxngDetail); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(body.Results))
	for _, r := range body.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Content, Published: r.PublishedDate})
	}
	return out, nil
}

func searxngDetail(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return ""
}
