package dispatch

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// stuck is an adapter ("bk") whose Send blocks until its context ends; it
// records the sends that started and those that returned.
type stuck struct {
	started  chan struct{} // receives once per Send
	mu       sync.Mutex
	returned int // guarded by mu
}

func (s *stuck) Name() string      { return "bk" }
func (s *stuck) AccountID() string { return "default" }
func (s *stuck) Run(ctx context.Context, h channels.Handler) error {
	<-ctx.Done()
	return nil
}
func (s *stuck) Send(ctx context.Context, out channels.Outbound) error {
	s.started <- struct{}{}
	<-ctx.Done()
	s.mu.Lock()
	s.returned++
	s.mu.Unlock()
	return ctx.Err()
}

func (s *stuck) sendsReturned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.returned
}

// TestShutdownWaitsForResendInFlight: Shutdown returns only after every
// goroutine the dispatcher started has ended, a resend in flight included
// (a reply found in the outbox at start with no session to queue it on is
// resent on a goroutine of its own). Its adapter's Send blocks until its
// context ends and the grace period never ends, so only Shutdown itself
// can end the resend: when Shutdown returns, the Send has returned and no
// goroutine started since the test began is left (goleak). The reply cut
// short stays in the outbox, unmarked, for the next start.
func TestShutdownWaitsForResendInFlight(t *testing.T) {
	before := goleak.IgnoreCurrent()
	h := newHarness(t, "", nil)
	h.grace = time.Hour // the grace period does not end the resend
	bk := &stuck{started: make(chan struct{}, 1)}
	h.d.Register(bk)
	target, err := json.Marshal(channels.Outbound{Address: channels.Address{Channel: "bk", AccountID: "default", ChatID: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	rp := sessions.Reply{ID: "r-stuck", AgentID: "main", SessionKey: "not a session key",
		Target: target, Chunks: []string{"answer"}}
	if err := h.journal().Ready(rp); err != nil {
		t.Fatal(err)
	}
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	<-bk.started // the resend is in flight

	h.close() // Dispatcher.Shutdown, then the sessions close
	if n := bk.sendsReturned(); n != 1 {
		t.Fatalf("Shutdown returned with the resend still in its Send (%d of 1 sends returned)", n)
	}
	goleak.VerifyNone(t, before)

	h.start()
	replies, err := h.journal().Replies()
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != 1 || replies[0].ID != rp.ID || replies[0].Sent != 0 {
		t.Fatalf("outbox after a resend cut short by Shutdown = %+v, want %s with no chunk marked", replies, rp.ID)
	}
}
