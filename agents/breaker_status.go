package agents

import "time"

// Breaker states as `gateway status` shows them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// BreakerStatus is one provider's breaker for `gateway status`.
type BreakerStatus struct {
	// State is closed (calls go through), open (skipped until OpenUntil)
	// or half-open (the cool-down is over: the next call is the trial).
	State string `json:"state"`
	// Failures counts consecutive failed calls while closed.
	Failures  int       `json:"failures,omitempty"`
	OpenedAt  time.Time `json:"openedAt,omitzero"`
	OpenUntil time.Time `json:"openUntil,omitzero"`
	// LastError and LastErrorAt are the latest failed call, kept after the
	// breaker closed again.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
}

// Status returns provider's breaker state.
func (b *Breaker) Status(provider string) BreakerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BreakerStatus{State: BreakerClosed}
	if lf, ok := b.last[provider]; ok {
		st.LastError, st.LastErrorAt = lf.err, lf.at
	}
	s := b.states[provider]
	if s == nil {
		return st
	}
	st.Failures = s.failures
	if s.openedAt.IsZero() {
		return st
	}
	st.State, st.OpenedAt, st.OpenUntil = BreakerOpen, s.openedAt, s.openedAt.Add(b.cooldown)
	if !s.trial && !b.now().Before(st.OpenUntil) {
		st.State = BreakerHalfOpen
	}
	return st
}
