package telegramtest

import (
	"context"
	"net"
	"net/http"
	"time"
)

// What the server recorded, and waiting for it.

// connState counts the client connections that are open: a request a
// client wrote before it died is still handled (and recorded) until its
// connection closes.
func (s *Server) connState(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns++
	case http.StateClosed, http.StateHijacked:
		s.conns--
	default:
		return
	}
	s.notifyLocked()
}

// WaitNoConns waits until no client connection is open: after a client
// process is killed, every request it had written has then been handled,
// so Sent holds all it will ever send.
func (s *Server) WaitNoConns(ctx context.Context) error {
	return s.wait(ctx, func() bool { return s.conns == 0 })
}

// recordLocked records a message sent or edited and returns when; s.mu
// must be held. The caller calls onSent once it has released s.mu.
func (s *Server) recordLocked(m Sent) time.Time {
	at := time.Now()
	s.sent, s.sentAt = append(s.sent, m), append(s.sentAt, at)
	s.notifyLocked()
	return at
}

func (s *Server) onSent(m Sent, at time.Time) {
	if s.opts.OnSent != nil {
		s.opts.OnSent(m, at)
	}
}

// SentCount is how many messages were sent or edited so far (no copy).
func (s *Server) SentCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// Sent returns a copy of every message sent or edited so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// SentAt returns when each message of Sent was recorded (the same
// indices; both only grow).
func (s *Server) SentAt() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.sentAt...)
}

// WaitSent waits until at least n messages were sent and returns them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	err := s.wait(ctx, func() bool { return len(s.sent) >= n })
	return s.Sent(), err
}

// Actions returns a copy of every chat action so far.
func (s *Server) Actions() []Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Action(nil), s.actions...)
}

// WaitActions waits until at least n chat actions were sent.
func (s *Server) WaitActions(ctx context.Context, n int) ([]Action, error) {
	err := s.wait(ctx, func() bool { return len(s.actions) >= n })
	return s.Actions(), err
}

// Calls reports how many times method was called (failed calls included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// WaitCalls waits until method was called at least n times.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) error {
	return s.wait(ctx, func() bool { return s.calls[method] >= n })
}

// Confirmed is the highest offset a getUpdates call sent: every update
// below it is acknowledged.
func (s *Server) Confirmed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// WaitConfirmed waits until update updateID is acknowledged (a getUpdates
// call asked for a higher offset).
func (s *Server) WaitConfirmed(ctx context.Context, updateID int) error {
	return s.wait(ctx, func() bool { return s.confirmed > updateID })
}

// Pending is the number of updates not yet acknowledged.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Webhook returns the registered webhook, if any.
func (s *Server) Webhook() (Webhook, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.webhook == nil {
		return Webhook{}, false
	}
	return *s.webhook, true
}
