package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// HTTPDoer is what both SDKs accept as their HTTP client.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// RetryClient retries a request on 429, 5xx and transport errors with
// exponential backoff and jitter, honouring Retry-After (seconds or an HTTP
// date) and retry-after-ms; a Retry-After longer than MaxDelay is not
// waited for (the answer is returned at once). Only the response head is
// awaited before a retry decision, so it suits streaming calls: once a 2xx
// stream has started, no retry happens. It is safe for concurrent use.
type RetryClient struct {
	Base       HTTPDoer      // nil: http.DefaultClient
	MaxRetries int           // retries after the first attempt
	BaseDelay  time.Duration // first backoff; 0 = 500ms
	MaxDelay   time.Duration // cap for one wait (also for Retry-After); 0 = 30s
	Logger     *zap.Logger
	// Sleep waits d or until ctx ends; nil uses a timer (tests inject).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do sends req, retrying as described on RetryClient.
func (c *RetryClient) Do(req *http.Request) (*http.Response, error) {
	base := c.Base
	if base == nil {
		base = http.DefaultClient
	}
	log := c.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.Body != nil && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("llm: retry: rewind body: %w", err)
			}
			req.Body = body
		}
		resp, err := base.Do(req)
		retry := false
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			retry = true
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			retry = true
			wait = retryAfter(resp.Header, time.Now())
		}
		if !retry || attempt >= c.MaxRetries || (req.Body != nil && req.GetBody == nil) || wait > c.maxDelay() {
			// A Retry-After beyond the longest wait: the provider will not
			// serve before then, so the answer goes up now (the fallback
			// model is tried) rather than after capped waits.
			return resp, err
		}
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		if maxd := c.maxDelay(); wait > maxd {
			wait = maxd
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		log.Warn("model request failed; retrying", zap.Int("status", status), zap.Int("attempt", attempt+1),
			zap.Duration("wait", wait), zap.NamedError("cause", err))
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (c *RetryClient) backoff(attempt int) time.Duration {
	d := c.BaseDelay
	if d <= 0 {
		d = 500 * time.Millisecond
	}
	d <<= min(attempt, 10)
	// Full jitter on the upper half keeps clients from retrying in step.
	return d/2 + rand.N(d/2+1)
}

func (c *RetryClient) maxDelay() time.Duration {
	if c.MaxDelay <= 0 {
		return 30 * time.Second
	}
	return c.MaxDelay
}

func (c *RetryClient) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryAfter reads retry-after-ms or Retry-After; 0 means "not given".
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return time.Nanosecond // "retry now": no backoff on top
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return time.Nanosecond
	}
	return 0
}
