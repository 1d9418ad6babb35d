package llm

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestResolveAPIKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MY_KEY": "from-my-env", "OPENAI_API_KEY": "from-default-env"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		cfg  ProviderConfig
		want string
	}{
		{"inline", ProviderConfig{APIKey: "inline", APIKeyEnv: "MY_KEY"}, "inline"},
		{"file", ProviderConfig{APIKeyFile: file, APIKeyEnv: "MY_KEY"}, "from-file"},
		{"env", ProviderConfig{APIKeyEnv: "MY_KEY"}, "from-my-env"},
		{"default env", ProviderConfig{}, "from-default-env"},
	} {
		got, err := tc.cfg.ResolveAPIKey("OPENAI_API_KEY", getenv)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := (ProviderConfig{APIKeyFile: filepath.Join(t.TempDir(), "missing")}).ResolveAPIKey("", getenv); err == nil {
		t.Error("missing key file: want an error")
	}
}

func TestProviderConfigValidate(t *testing.T) {
	good := []ProviderConfig{{Type: "echo"}, {Type: "openai", BaseURL: "http://localhost:11434/v1"}, {Type: "anthropic", APIKeyEnv: "X"}}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []ProviderConfig{{}, {Type: "gemini"}, {Type: "openai", TimeoutSeconds: -1}, {Type: "openai", APIKey: "a", APIKeyFile: "b"}, {Type: "openai", BaseURL: "localhost"}}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
	if (ProviderConfig{}).Retries() != DefaultMaxRetries || (ProviderConfig{MaxRetries: Retry(-1)}).Retries() != 0 {
		t.Error("Retries defaults wrong")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": "0"}, time.Nanosecond},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second},
		{map[string]string{"retry-after-ms": "150", "Retry-After": "9"}, 150 * time.Millisecond},
		{map[string]string{"Retry-After": "soon"}, 0},
		{nil, 0},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestRetryClientHonoursRetryAfter(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := new(bytes.Buffer)
		_, _ = buf.ReadFrom(r.Body)
		if buf.String() != "payload" {
			t.Errorf("attempt %d body %q", n.Load(), buf.String())
		}
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
		case 2:
			w.WriteHeader(502)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	var waits []time.Duration
	c := &RetryClient{MaxRetries: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Minute,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("payload"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || n.Load() != 3 {
		t.Fatalf("status %d after %d attempts", resp.StatusCode, n.Load())
	}
	if len(waits) != 2 || waits[0] != 7*time.Second || waits[1] < 100*time.Millisecond || waits[1] > 200*time.Millisecond {
		t.Fatalf("waits = %v, want [7s, backoff in [100ms,200ms]]", waits)
	}
}

func TestIsContextOverflowText(t *testing.T) {
	if !IsContextOverflowText("prompt is too long: 210000 tokens > 200000 maximum") ||
		!IsContextOverflowText("This model's maximum context length is 8192 tokens") ||
		IsContextOverflowText("rate limited") {
		t.Fatal("classification wrong")
	}
}
