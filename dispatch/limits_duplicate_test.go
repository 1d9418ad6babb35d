package dispatch

import (
	"errors"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/limits"
)

// TestDuplicateDeliveryTakesNoRateToken: a platform that delivers the same
// message again (Telegram re-sends an update it thinks unconfirmed) has
// the copy dropped as a duplicate; the copy does not count against the
// sender's rate, so the sender's next message is not throttled.
func TestDuplicateDeliveryTakesNoRateToken(t *testing.T) {
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Rate: "2/min"}
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	h := newHarness(t, "", nil, withLimits(t, cfg, clk, &lim))
	first := limitGroupMsg("1", "hello")
	if err := h.d.Handle(h.ctx, first); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := h.d.Handle(h.ctx, first); !errors.Is(err, channels.ErrDuplicate) {
		t.Fatalf("redelivered: %v, want ErrDuplicate", err)
	}
	if err := h.d.Handle(h.ctx, limitGroupMsg("1", "second")); err != nil {
		t.Errorf("the sender's second message: %v, want accepted (2/min, one message so far)", err)
	}
	h.drained()
}
