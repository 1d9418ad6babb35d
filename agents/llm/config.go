package llm

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gateway/gateway/internal/secret"
)

// Provider types understood by agents.NewProviders.
const (
	TypeOpenAI    = "openai"
	TypeAnthropic = "anthropic"
	TypeEcho      = "echo"
)

// Defaults for ProviderConfig.
const (
	DefaultTimeout    = 300 * time.Second
	DefaultMaxRetries = 3
)

// ProviderConfig is one entry of the top-level `providers:` map. The
// provider packages take it as their typed configuration; the config loader
// decodes `providers:` into map[string]ProviderConfig.
type ProviderConfig struct {
	Type    string `mapstructure:"type"`    // openai | anthropic | echo
	BaseURL string `mapstructure:"baseURL"` // empty: the public endpoint of Type
	// The API key comes from APIKey, else the file APIKeyFile, else the
	// environment variable APIKeyEnv, else the type's usual variable
	// (OPENAI_API_KEY, ANTHROPIC_API_KEY).
	APIKey         string `mapstructure:"apiKey"`
	APIKeyFile     string `mapstructure:"apiKeyFile"`
	APIKeyEnv      string `mapstructure:"apiKeyEnv"`
	TimeoutSeconds int    `mapstructure:"timeoutSeconds"` // per model call; 0 = 300
	// MaxRetries is how often a 429/5xx or transport error is retried after
	// the first attempt. Unset (nil) means DefaultMaxRetries; 0 means no
	// retry, as a negative number did before (still accepted). A pointer, so
	// that an explicit 0 is not read as "unset".
	MaxRetries *int              `mapstructure:"maxRetries"`
	Headers    map[string]string `mapstructure:"headers"` // extra request headers
	// VisionModels are the models of this provider that take images
	// (patterns as path.Match reads them, "*" for all). Images sent to any
	// other model become a text note.
	VisionModels []string `mapstructure:"visionModels"`
	// Models holds per-model settings, e.g. models.<model>.price (USD per
	// million tokens) from which each assistant message's cost is computed.
	Models map[string]ModelConfig `mapstructure:"models"`
}

// Validate checks the fields that do not depend on the environment.
func (c ProviderConfig) Validate() error {
	switch c.Type {
	case TypeOpenAI, TypeAnthropic, TypeEcho:
	case "":
		return errors.New("type: missing (want openai, anthropic or echo)")
	default:
		return fmt.Errorf("type %q: want openai, anthropic or echo", c.Type)
	}
	if c.TimeoutSeconds < 0 {
		return fmt.Errorf("timeoutSeconds %d: must not be negative", c.TimeoutSeconds)
	}
	if c.APIKey != "" && c.APIKeyFile != "" {
		return errors.New("apiKey and apiKeyFile: set only one")
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("baseURL %q: want an http:// or https:// URL", c.BaseURL)
	}
	if err := validateModels(c.Models); err != nil {
		return err
	}
	return validateVisionModels(c.VisionModels)
}

// Timeout is the per-call timeout.
func (c ProviderConfig) Timeout() time.Duration {
	if c.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return time.Duration(c.TimeoutSeconds) * time.Second
}

// Retries is the number of retries after the first attempt.
func (c ProviderConfig) Retries() int {
	switch {
	case c.MaxRetries == nil:
		return DefaultMaxRetries
	case *c.MaxRetries < 0:
		return 0
	}
	return *c.MaxRetries
}

// Retry returns a MaxRetries value of n, for configs built in code.
func Retry(n int) *int { return &n }

// ResolveAPIKey returns the API key (see ProviderConfig). defaultEnv is the
// type's usual variable; getenv nil means os.Getenv. An empty key is not an
// error here: local servers (Ollama, vLLM) often need none.
func (c ProviderConfig) ResolveAPIKey(defaultEnv string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch {
	case c.APIKey != "":
		return c.APIKey, nil
	case c.APIKeyFile != "":
		k, err := secret.ReadFile(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("apiKeyFile: %w", err)
		}
		return k, nil
	case c.APIKeyEnv != "":
		return getenv(c.APIKeyEnv), nil
	case defaultEnv != "":
		return getenv(defaultEnv), nil
	}
	return "", nil
}
