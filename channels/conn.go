package channels

import (
	"sync"
	"time"
)

// Connection state of a channel account (issue 25: `gateway status`). An
// adapter that talks to a platform records what its connection does in a
// ConnTracker and reports it through ConnReporter; the daemon reads it for
// /api/status. Adapters without one (the web chat, served by the HTTP API)
// are connected while the daemon runs.

// ConnState is where an account's connection to its platform stands.
type ConnState string

// Connection states.
const (
	// ConnConnecting: Run started and has not reached the platform yet.
	ConnConnecting ConnState = "connecting"
	// ConnConnected: the last call to the platform's receiving end
	// (long poll, gateway connection) succeeded.
	ConnConnected ConnState = "connected"
	// ConnReconnecting: the connection failed fewer than FailingAfter
	// times in a row; the adapter is retrying.
	ConnReconnecting ConnState = "reconnecting"
	// ConnFailing: it failed FailingAfter times or more in a row, or
	// with an error retrying will not fix (the adapter stopped).
	ConnFailing ConnState = "failing"
)

// FailingAfter is how many consecutive failed attempts turn an account
// from reconnecting to failing. With the adapters' backoff (1 s doubling)
// that is a few seconds of an unreachable platform: a blip reads
// "reconnecting", an outage "failing".
const FailingAfter = 3

// Connection is a snapshot of an account's connection.
type Connection struct {
	State ConnState `json:"state"`
	// Mode is how it receives: "polling", "webhook" or "gateway".
	Mode string `json:"mode,omitempty"`
	// Since is when State began (for reconnecting and failing: the first
	// failure of the current run of them).
	Since time.Time `json:"since"`
	// Failures counts consecutive failed attempts (0 when connected).
	Failures int `json:"failures,omitempty"`
	// LastError is the latest failure and LastErrorAt when it happened;
	// they stay after a recovery, for the operator.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitempty"`
}

// ConnReporter is implemented by adapters that track their connection.
type ConnReporter interface {
	// Connection returns the current state; safe for concurrent use.
	Connection() Connection
}

// ConnTracker records an adapter's connection state. The zero value is
// usable (state connecting, mode unset); it is safe for concurrent use.
type ConnTracker struct {
	now func() time.Time // nil: time.Now

	mu sync.Mutex // guards c
	c  Connection
}

// SetMode records how the account receives ("polling", "webhook",
// "gateway"); called first, it also marks when connecting began.
func (t *ConnTracker) SetMode(mode string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Mode = mode
	if t.c.State == "" {
		t.c.State, t.c.Since = ConnConnecting, t.clock()
	}
}

// Connected records a successful attempt.
func (t *ConnTracker) Connected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c.State != ConnConnected {
		t.c.State, t.c.Since = ConnConnected, t.clock()
	}
	t.c.Failures = 0
}

// Failed records a failed attempt that will be retried.
func (t *ConnTracker) Failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	t.noteLocked(err, now)
	t.c.Failures++
	switch {
	case t.c.Failures >= FailingAfter:
		if t.c.State != ConnFailing {
			if t.c.State != ConnReconnecting {
				t.c.Since = now
			}
			t.c.State = ConnFailing
		}
	case t.c.State != ConnReconnecting:
		t.c.State, t.c.Since = ConnReconnecting, now
	}
}

// Stopped records a failure the adapter does not retry (its Run returned
// with err): failing at once.
func (t *ConnTracker) Stopped(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	t.noteLocked(err, now)
	t.c.Failures = max(t.c.Failures+1, FailingAfter)
	if t.c.State != ConnFailing {
		t.c.State, t.c.Since = ConnFailing, now
	}
}

// Connection implements ConnReporter.
func (t *ConnTracker) Connection() Connection {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	if c.State == "" {
		c.State = ConnConnecting
	}
	return c
}

func (t *ConnTracker) noteLocked(err error, now time.Time) {
	if err != nil {
		t.c.LastError, t.c.LastErrorAt = err.Error(), now
	}
}

func (t *ConnTracker) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}
