package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Rate limits (429). discordgo answers a 429 by sleeping its retry_after
// regardless of the request's context and then retrying, for ever, and a
// global 429 it keeps to the one request. The adapter's message posts,
// edits, deletions and typing turn that off (WithRetryOnRatelimit(false)) and
// wait themselves: a route's 429 holds that route (one channel's message
// posts, or its edits and deletions), a global one (X-RateLimit-Global,
// seen by the HTTP transport) every route, until retry_after has passed;
// while a route is held nothing is asked of Discord there. A post waits
// out a hold of at most Options.MaxRetryAfter within its context; a
// longer hold, and any for a draft (channels.Drafter: the caller skips to
// its latest text), is returned at once as a *RateLimitError, which
// channels.Answered (nothing was posted) and channels.RetryAfter read.
// A reply through a slash command's interaction (its first part edited
// in, later ones as followups) is handled like a post. Typing is best
// effort: its 429 is returned at once too (the dispatcher waits for a
// typing call in flight before the reply). Other calls (interaction
// callbacks, lookups, reactions) keep discordgo's handling.

// DefaultMaxRetryAfter is Options.MaxRetryAfter when zero.
const DefaultMaxRetryAfter = time.Minute

// maxRateLimited is how many 429s in a row one call takes before it
// returns the last.
const maxRateLimited = 3

// RateLimitError is Discord's 429: nothing was done; try again after
// RetryAfter.
type RateLimitError struct {
	Route      string
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited on %s: retry after %s", e.Route, e.RetryAfter.Round(time.Millisecond))
}

// RetryDelay implements channels.RetryAfter.
func (e *RateLimitError) RetryDelay() time.Duration { return e.RetryAfter }

// Answered implements channels.Answered: a 429 posts nothing.
func (e *RateLimitError) Answered() bool { return true }

// holds are the routes (and the whole bot, global) Discord asked to wait.
type holds struct {
	mu     sync.Mutex
	global time.Time            // guarded by mu
	routes map[string]time.Time // guarded by mu
}

// until is when route may be asked again.
func (h *holds) until(route string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.routes[route]; t.After(h.global) {
		return t
	}
	return h.global
}

func (h *holds) hold(route string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.routes == nil {
		h.routes = map[string]time.Time{}
	}
	now := time.Now()
	for r, t := range h.routes {
		if now.After(t) {
			delete(h.routes, r)
		}
	}
	if t := now.Add(d); t.After(h.routes[route]) {
		h.routes[route] = t
	}
}

func (h *holds) holdGlobal(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := time.Now().Add(d); t.After(h.global) {
		h.global = t
	}
}

// globalLimits is the REST transport noting global 429s in holds (the
// error discordgo returns does not say which kind a 429 was).
type globalLimits struct {
	next  http.RoundTripper
	holds *holds
}

func (g *globalLimits) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := g.next.RoundTrip(req)
	if err == nil && res.StatusCode == http.StatusTooManyRequests && res.Header.Get("X-RateLimit-Global") != "" {
		if secs, perr := strconv.ParseFloat(res.Header.Get("Retry-After"), 64); perr == nil && secs > 0 {
			g.holds.holdGlobal(time.Duration(secs * float64(time.Second)))
		}
	}
	return res, err
}

// limitedClient returns c with its transport wrapped in globalLimits.
func limitedClient(c *http.Client, h *holds) *http.Client {
	lc := *c
	next := lc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	lc.Transport = &globalLimits{next: next, holds: h}
	return &lc
}

// rest makes call, a REST request on route, with discordgo's rate-limit
// retries off and ctx applied (the options it gets): a 429 holds the
// route and, when wait allows and the hold is within MaxRetryAfter, is
// waited out within ctx and the call made again; a caller that waits rate
// limits out itself, off its concurrency slot (channels.ReturnRateLimits:
// the outbox on a lane), gets it back at once.
func (a *Adapter) rest(ctx context.Context, route string, wait bool, call func(opts ...discordgo.RequestOption) error) error {
	for n := 0; ; n++ {
		if d := time.Until(a.holds.until(route)); d > 0 {
			if !wait || d > a.maxRetryAfter() || n == maxRateLimited || channels.RateLimitsReturned(ctx) {
				return &RateLimitError{Route: route, RetryAfter: d}
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("waiting out a rate limit: %w", ctx.Err())
			case <-t.C:
			}
		}
		err := call(discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		var rl *discordgo.RateLimitError
		if !errors.As(err, &rl) || rl.RateLimit == nil || rl.TooManyRequests == nil {
			return err
		}
		a.holds.hold(route, max(rl.RetryAfter, time.Millisecond))
		a.log.Info("rate limited", zap.String("route", route), zap.Duration("retry_after", rl.RetryAfter))
	}
}

func (a *Adapter) maxRetryAfter() time.Duration {
	if a.opts.MaxRetryAfter > 0 {
		return a.opts.MaxRetryAfter
	}
	return DefaultMaxRetryAfter
}

// Routes: discordgo's bucket ids of the calls rest makes.
func postRoute(channel string) string { return discordgo.EndpointChannelMessages(channel) }
func editRoute(channel string) string { return discordgo.EndpointChannelMessage(channel, "") }
