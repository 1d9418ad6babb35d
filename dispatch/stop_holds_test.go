package dispatch

import (
	"testing"
	"time"

	"github.com/gateway/gateway/limits"
)

// TestStopReleasesQueuedBudgetHolds (SPEC §6.1 /stop, issue 22's holds):
// a message allowed under a budget holds its turn's estimate until its
// turn is charged or it ends without one; /stop ends the queued ones
// without a turn, so their holds go too. Left (until they expire, 15
// min), they count against the sender's budget and refuse messages it
// has room for.
func TestStopReleasesQueuedBudgetHolds(t *testing.T) {
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Daily: limits.Budget{Tokens: 2}}
	cfg.TurnEstimate = limits.Budget{Tokens: 1}
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	m := &model{block: make(chan struct{}), started: make(chan struct{}, 10)}
	h := newHarness(t, "", m, withLimits(t, cfg, clk, &lim))
	h.handle(limitGroupMsg("1", "busy"))
	<-m.started
	h.handle(limitGroupMsg("1", "queued")) // holds the budget's second token
	h.handle(limitGroupMsg("1", "/stop"))
	eventually(t, "the stopped lane to end", func() bool { return h.d.queue.Snapshot(0).Keys == 0 })
	// Nothing was spent: the budget has room for two turns' estimates.
	h.handle(limitGroupMsg("1", "third"))
	<-m.started
	if err := h.d.Handle(h.ctx, limitGroupMsg("1", "fourth")); err != nil {
		t.Errorf("Handle(fourth): %v; want it accepted: the stopped message's hold still counts", err)
	}
	close(m.block)
	h.drained()
}
