package websearch

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/gateway/gateway/internal/secret"
)

// Provider names of Config.Provider.
const (
	ProviderSearXNG = "searxng"
	ProviderBrave   = "brave"
)

// Defaults of Config.
const (
	DefaultMaxResults    = 5
	MaxMaxResults        = 20
	DefaultTimeout       = 10 * time.Second
	DefaultMaxPerTurn    = 3
	DefaultRatePerMinute = 30
	// MaxBytes is the most of a provider's response that is read.
	MaxBytes = 1 << 20
	// DefaultBraveURL is the Brave Search API's address.
	DefaultBraveURL = "https://api.search.brave.com"
	// BraveKeyEnv is the variable the Brave key is read from when the
	// config names none.
	BraveKeyEnv = "BRAVE_API_KEY"
)

// Config is the webSearch section. The zero value (no provider) is off.
type Config struct {
	// Provider is searxng or brave; "" turns web_search off.
	Provider string `mapstructure:"provider"`
	// BaseURL is the provider's address: required for searxng (the
	// instance, e.g. http://127.0.0.1:8888), default DefaultBraveURL.
	BaseURL string `mapstructure:"baseURL"`
	// The API key (brave) comes from APIKey, else the file APIKeyFile,
	// else the variable APIKeyEnv, else BRAVE_API_KEY.
	APIKey     string `mapstructure:"apiKey"`
	APIKeyFile string `mapstructure:"apiKeyFile"`
	APIKeyEnv  string `mapstructure:"apiKeyEnv"`
	// MaxResults is the results a query returns at most (default 5, at
	// most 20); the model may ask for fewer.
	MaxResults int `mapstructure:"maxResults"`
	// Timeout bounds one search (default 10s).
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxPerTurn bounds the searches of one turn (default 3); past it the
	// model reads an error result.
	MaxPerTurn int `mapstructure:"maxPerTurn"`
	// RatePerMinute bounds the searches of the whole daemon (default 30,
	// a burst of as many); past it the model reads an error result.
	RatePerMinute int `mapstructure:"ratePerMinute"`
}

// Enabled reports whether a provider is configured.
func (c Config) Enabled() bool { return c.Provider != "" }

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.MaxResults == 0 {
		c.MaxResults = DefaultMaxResults
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxPerTurn == 0 {
		c.MaxPerTurn = DefaultMaxPerTurn
	}
	if c.RatePerMinute == 0 {
		c.RatePerMinute = DefaultRatePerMinute
	}
	if c.Provider == ProviderBrave && c.BaseURL == "" {
		c.BaseURL = DefaultBraveURL
	}
	return c
}

// Validate checks c (after WithDefaults); errors name the key under
// webSearch.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	switch c.Provider {
	case ProviderSearXNG:
		if c.BaseURL == "" {
			errs = append(errs, errors.New("baseURL: required for searxng (the instance's address, e.g. http://127.0.0.1:8888)"))
		}
	case ProviderBrave:
	default:
		return fmt.Errorf("provider: %q: want searxng or brave (or leave it empty for off)", c.Provider)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("baseURL: %q: want an absolute http(s) URL", c.BaseURL))
		}
	}
	if c.APIKey != "" && c.APIKeyFile != "" {
		errs = append(errs, errors.New("apiKey and apiKeyFile: set only one"))
	}
	if c.MaxResults < 1 || c.MaxResults > MaxMaxResults {
		errs = append(errs, fmt.Errorf("maxResults %d: want 1..%d", c.MaxResults, MaxMaxResults))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive", c.Timeout))
	}
	if c.MaxPerTurn < 1 {
		errs = append(errs, fmt.Errorf("maxPerTurn %d: at least 1", c.MaxPerTurn))
	}
	if c.RatePerMinute < 1 {
		errs = append(errs, fmt.Errorf("ratePerMinute %d: at least 1", c.RatePerMinute))
	}
	return errors.Join(errs...)
}

// APIKeyValue returns the key (see Config); getenv nil means os.Getenv.
// brave without a key is an error naming where it was looked for.
func (c Config) APIKeyValue(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var key, from string
	switch {
	case c.APIKey != "":
		key, from = c.APIKey, "apiKey"
	case c.APIKeyFile != "":
		k, err := secret.ReadFile(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("apiKeyFile: %w", err)
		}
		key, from = k, "apiKeyFile"
	case c.APIKeyEnv != "":
		key, from = getenv(c.APIKeyEnv), "$"+c.APIKeyEnv
	case c.Provider == ProviderBrave:
		key, from = getenv(BraveKeyEnv), "$"+BraveKeyEnv
	}
	if key == "" && c.Provider == ProviderBrave {
		if from == "" {
			from = "$" + BraveKeyEnv
		}
		return "", fmt.Errorf("apiKey: brave needs an API key (none in %s)", from)
	}
	return key, nil
}
