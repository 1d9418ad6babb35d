package discordtest

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Rate limits: a 429 as Discord sends it, with the bucket headers
// (remaining 0, reset after retry_after; X-RateLimit-Global for the global
// limit) and the JSON body (message, retry_after in seconds, global).

// rateLimit is a pending 429 answer.
type rateLimit struct {
	after  time.Duration
	global bool
}

// shortRateLimit is the retry_after of RateLimitNext and
// RateLimitEditsNext.
const shortRateLimit = 10 * time.Millisecond

// writeRateLimitLocked answers a request with 429 and counts it. s.mu is held.
func (s *Server) writeRateLimitLocked(w http.ResponseWriter, rl rateLimit) {
	s.limited++
	s.notifyLocked()
	secs := strconv.FormatFloat(rl.after.Seconds(), 'f', 3, 64)
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(int64(rl.after.Round(time.Second)/time.Second), 10))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", secs)
	h.Set("X-RateLimit-Scope", "user")
	if rl.global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.",
		"retry_after": rl.after.Seconds(), "global": rl.global})
}

// RateLimitNext makes the next n message posts fail with 429 and a short
// retry_after.
func (s *Server) RateLimitNext(n int) { s.RateLimitPostsFor(n, shortRateLimit, false) }

// RateLimitPostsFor makes the next n message posts fail with 429 and
// retry_after after (the global limit's if global).
func (s *Server) RateLimitPostsFor(n int, after time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postLimits = nil
	for range n {
		s.postLimits = append(s.postLimits, rateLimit{after: after, global: global})
	}
}

// RateLimitTypingFor makes the next n typing triggers fail with 429 and
// retry_after after.
func (s *Server) RateLimitTypingFor(n int, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.typingLimits = nil
	for range n {
		s.typingLimits = append(s.typingLimits, rateLimit{after: after})
	}
}

// RateLimitFollowupsFor makes the next n interaction followups fail with
// 429 and retry_after after.
func (s *Server) RateLimitFollowupsFor(n int, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.followupLimits = nil
	for range n {
		s.followupLimits = append(s.followupLimits, rateLimit{after: after})
	}
}

// RateLimitEditsNext makes the next n message edits fail with 429 and a
// short retry_after.
func (s *Server) RateLimitEditsNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.editLimits = nil
	for range n {
		s.editLimits = append(s.editLimits, rateLimit{after: shortRateLimit})
	}
}

// takeLimitLocked pops the next pending 429 of q. s.mu is held.
func takeLimitLocked(q *[]rateLimit) (rateLimit, bool) {
	if len(*q) == 0 {
		return rateLimit{}, false
	}
	rl := (*q)[0]
	*q = (*q)[1:]
	return rl, true
}

// RateLimited is how many requests the fake answered with 429.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// WaitRateLimited waits until at least n requests were answered with 429.
func (s *Server) WaitRateLimited(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.limited >= n })
}
