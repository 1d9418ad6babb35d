package channels

import "context"

// A caller that waits a platform's rate limit out itself, off any
// concurrency slot (the outbox hands the wait of a reply on its session's
// lane outside the global cap), marks its context with ReturnRateLimits:
// an adapter then returns a rate-limit answer at once (RetryAfter reads
// it) instead of waiting it out in place, where the wait would hold the
// caller's slot and queue other chats' replies behind one rate-limited
// chat. Without the mark an adapter waits out short limits itself.

type returnRateLimitsKey struct{}

// ReturnRateLimits returns ctx marked for a caller that waits rate limits
// out itself.
func ReturnRateLimits(ctx context.Context) context.Context {
	return context.WithValue(ctx, returnRateLimitsKey{}, true)
}

// RateLimitsReturned reports whether ctx carries ReturnRateLimits' mark:
// an adapter returns a rate-limit answer at once instead of waiting.
func RateLimitsReturned(ctx context.Context) bool {
	v, _ := ctx.Value(returnRateLimitsKey{}).(bool)
	return v
}
