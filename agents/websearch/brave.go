package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Brave queries the Brave Search API's web search:
// GET <BaseURL>/res/v1/web/search?q=<query>&count=<n> with the key in the
// X-Subscription-Token header. Errors come as
// {"type":"ErrorResponse","error":{"status":429,"code":"RATE_LIMITED","detail":"…"}}.
type Brave struct {
	BaseURL string
	APIKey  string
}

// Name is "brave".
func (Brave) Name() string { return ProviderBrave }

// braveMaxCount is the API's largest count.
const braveMaxCount = 20

type braveResponse struct {
	Type string `json:"type"`
	Web  struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			Age         string `json:"age"`
			PageAge     string `json:"page_age"`
		} `json:"results"`
	} `json:"web"`
}

// Search runs q.
func (b Brave) Search(ctx context.Context, client *http.Client, q Query) ([]Result, error) {
	n := min(max(q.Count, 1), braveMaxCount)
	u := strings.TrimRight(b.BaseURL, "/") + "/res/v1/web/search?" +
		url.Values{"q": {q.Text}, "count": {strconv.Itoa(n)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("brave: request: %w", err)
	}
	req.Header.Set("X-Subscription-Token", b.APIKey)
	var body braveResponse
	if err := getJSON(client, req, "brave", &body, braveDetail); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(body.Web.Results))
	for _, r := range body.Web.Results {
		pub := r.PageAge
		if pub == "" {
			pub = r.Age
		}
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: stripBraveMarkup(r.Description), Published: pub})
	}
	return out, nil
}

// stripBraveMarkup drops the <strong> tags Brave puts around matched words.
func stripBraveMarkup(s string) string {
	return strings.NewReplacer("<strong>", "", "</strong>", "").Replace(s)
}

func braveDetail(body []byte) string {
	var e struct {
		Error struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Error.Code == "" && e.Error.Detail == "") {
		return ""
	}
	return strings.TrimSpace(e.Error.Code + " " + e.Error.Detail)
}
