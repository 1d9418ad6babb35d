package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Query is one search.
type Query struct {
	Text  string
	Count int // results wanted, 1..Config.MaxResults
}

// Result is one hit as the model reads it.
type Result struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Snippet   string `json:"snippet,omitempty"`
	Published string `json:"published,omitempty"`
}

// Provider is one search API. Search returns at most q.Count results; an
// error's message is safe to show to the model (it names the provider and
// the HTTP status, never the key).
type Provider interface {
	Name() string
	Search(ctx context.Context, client *http.Client, q Query) ([]Result, error)
}

// Limits of what reaches the model.
const (
	MaxQueryChars   = 400
	maxTitleChars   = 200
	maxSnippetChars = 500
)

// ErrRate is returned when the daemon-wide rate is spent.
var ErrRate = errors.New("web_search: the search rate of this gateway is spent; try again in a minute")

// Searcher runs searches through one Provider within Config's limits.
type Searcher struct {
	cfg    Config
	prov   Provider
	client *http.Client
	rate   *rate.Limiter
}

// Options are New's seams; zero fields take the defaults.
type Options struct {
	// Client replaces the HTTP client (its Timeout is set from Config).
	Client *http.Client
	// Getenv replaces os.Getenv for the API key.
	Getenv func(string) string
}

// New returns the Searcher cfg configures, or nil when web search is off.
func New(cfg Config, opts Options) (*Searcher, error) {
	cfg = cfg.WithDefaults()
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("websearch: %w", err)
	}
	key, err := cfg.APIKeyValue(opts.Getenv)
	if err != nil {
		return nil, fmt.Errorf("websearch: %w", err)
	}
	var p Provider
	switch cfg.Provider {
	case ProviderSearXNG:
		p = SearXNG{BaseURL: cfg.BaseURL}
	case ProviderBrave:
		p = Brave{BaseURL: cfg.BaseURL, APIKey: key}
	}
	return NewWith(cfg, p, opts.Client), nil
}

// NewWith returns a Searcher over p (tests and other providers); cfg is
// taken with its defaults.
func NewWith(cfg Config, p Provider, client *http.Client) *Searcher {
	cfg = cfg.WithDefaults()
	c := &http.Client{Timeout: cfg.Timeout}
	if client != nil {
		c.Transport = client.Transport
	}
	return &Searcher{cfg: cfg, prov: p, client: c,
		rate: rate.NewLimiter(rate.Every(time.Minute/time.Duration(cfg.RatePerMinute)), cfg.RatePerMinute)}
}

// MaxPerTurn is the searches one turn may make.
func (s *Searcher) MaxPerTurn() int { return s.cfg.MaxPerTurn }

// MaxResults is the results one search returns at most.
func (s *Searcher) MaxResults() int { return s.cfg.MaxResults }

// Provider names the provider.
func (s *Searcher) Provider() string { return s.prov.Name() }

// Search runs q. A blank or overlong query, a spent rate and a provider
// failure are errors whose message the model may read.
func (s *Searcher) Search(ctx context.Context, q Query) ([]Result, error) {
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" {
		return nil, errors.New("query: required")
	}
	if utf8.RuneCountInString(q.Text) > MaxQueryChars {
		return nil, fmt.Errorf("query: longer than %d characters", MaxQueryChars)
	}
	if q.Count <= 0 || q.Count > s.cfg.MaxResults {
		q.Count = s.cfg.MaxResults
	}
	if !s.rate.Allow() {
		return nil, ErrRate
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	rs, err := s.prov.Search(ctx, s.client, q)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, min(len(rs), q.Count))
	for _, r := range rs {
		if len(out) == q.Count {
			break
		}
		if !citable(r.URL) {
			continue // a result the model could not cite is no result
		}
		r.Title, r.Snippet = cut(oneLine(r.Title), maxTitleChars), cut(oneLine(r.Snippet), maxSnippetChars)
		out = append(out, r)
	}
	return out, nil
}

func citable(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// getJSON sends req and decodes a 200 response's JSON body (at most
// MaxBytes) into v. Other statuses are errors naming the provider and
// status, with the provider's own short message when it gave one (detail).
func getJSON(client *http.Client, req *http.Request, provider string, v any, detail func([]byte) string) error {
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return fmt.Errorf("%s: no answer in time", provider)
		}
		return fmt.Errorf("%s: request failed: %s", provider, transportReason(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return fmt.Errorf("%s: read response: %w", provider, err)
	}
	if len(body) > MaxBytes {
		return fmt.Errorf("%s: response larger than %d KiB", provider, MaxBytes>>10)
	}
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("%s: HTTP %d", provider, resp.StatusCode)
		if d := detail(body); d != "" {
			msg += ": " + cut(oneLine(d), 200)
		}
		return errors.New(msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: response is not the expected JSON: %w", provider, err)
	}
	return nil
}

// transportReason is a transport error without the URL (which for some
// providers carries the query and is noise for the model).
func transportReason(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap().Error()
	}
	return err.Error()
}
