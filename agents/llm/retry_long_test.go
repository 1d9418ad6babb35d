package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetryClientDoesNotWaitOutALongRetryAfter: a 429/503 whose
// Retry-After (seconds or an HTTP date) is beyond the longest wait is
// answered at once, not retried after the capped wait: the provider said
// it will not serve before then, and each capped wait (30 s) only held
// the turn back from the fallback model, retries times over.
func TestRetryClientDoesNotWaitOutALongRetryAfter(t *testing.T) {
	for _, after := range []string{"3600", time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Retry-After", after)
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		var waits []time.Duration
		c := &RetryClient{MaxRetries: 3, MaxDelay: 30 * time.Second,
			Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("payload"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != http.StatusTooManyRequests || n.Load() != 1 || len(waits) != 0 {
			t.Errorf("Retry-After %s: status %d after %d attempts, waits %v; want the 429 at once", after, resp.StatusCode, n.Load(), waits)
		}
	}
}
