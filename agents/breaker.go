package agents

import (
	"sync"
	"time"
)

// Breaker defaults: a provider is skipped for BreakerCooldown after
// BreakerThreshold consecutive failed calls.
const (
	DefaultBreakerThreshold = 3
	DefaultBreakerCooldown  = 60 * time.Second
)

// Breaker is a circuit breaker per provider name. Closed, every call goes
// through; after Threshold consecutive failures it opens and Allow refuses
// calls for Cooldown; then it lets one trial call through (half-open),
// which closes it on success or opens it for another Cooldown on failure.
// It is safe for concurrent use.
type Breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu     sync.Mutex               // guards states and last
	states map[string]*breakerState // by provider name
	last   map[string]lastFailure   // latest failure by provider, kept after recovery
}

// lastFailure is a provider's latest failed call, for `gateway status`.
type lastFailure struct {
	err string
	at  time.Time
}

type breakerState struct {
	failures int       // consecutive failures while closed
	openedAt time.Time // zero: closed
	trial    bool      // a half-open trial call is out
}

// NewBreaker returns a Breaker; zero or negative settings take the defaults,
// a nil now takes time.Now.
func NewBreaker(threshold int, cooldown time.Duration, now func() time.Time) *Breaker {
	if threshold <= 0 {
		threshold = DefaultBreakerThreshold
	}
	if cooldown <= 0 {
		cooldown = DefaultBreakerCooldown
	}
	if now == nil {
		now = time.Now
	}
	return &Breaker{threshold: threshold, cooldown: cooldown, now: now, states: map[string]*breakerState{},
		last: map[string]lastFailure{}}
}

// Allow reports whether a call to provider may go out now. A true answer
// for an open breaker past its cool-down is the one trial call: the caller
// must report its outcome (Success, Failure or Abandon).
func (b *Breaker) Allow(provider string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.states[provider]
	if st == nil || st.openedAt.IsZero() {
		return true
	}
	if st.trial || b.now().Sub(st.openedAt) < b.cooldown {
		return false
	}
	st.trial = true
	return true
}

// Open reports whether provider's breaker is open (or half-open with its
// trial out), for /status and logs.
func (b *Breaker) Open(provider string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.states[provider]
	return st != nil && !st.openedAt.IsZero()
}

// Success records a call that answered: the breaker closes.
func (b *Breaker) Success(provider string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.states, provider)
}

// Failure records a call that failed through the provider's fault; it
// reports whether the breaker opened (or reopened) because of it.
func (b *Breaker) Failure(provider string) bool { return b.FailureErr(provider, nil) }

// FailureErr is Failure that also keeps err as the provider's latest
// failure (BreakerStatus.LastError).
func (b *Breaker) FailureErr(provider string, err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.last[provider] = lastFailure{err: err.Error(), at: b.now()}
	}
	st := b.states[provider]
	if st == nil {
		st = &breakerState{}
		b.states[provider] = st
	}
	if !st.openedAt.IsZero() {
		// A failed trial (or a call let through as a last resort) reopens.
		st.openedAt, st.trial = b.now(), false
		return true
	}
	st.failures++
	if st.failures >= b.threshold {
		st.openedAt, st.failures = b.now(), 0
		return true
	}
	return false
}

// Abandon records a call that ended without an answer about the provider
// (cancelled, or failed through the request's fault): a trial may be made
// again, nothing else changes.
func (b *Breaker) Abandon(provider string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.states[provider]; st != nil {
		st.trial = false
	}
}
