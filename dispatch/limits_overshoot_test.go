package dispatch

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/limits"
)

// TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurn (issue 22): one sender
// posts in ten group chats at once while no turn has ended (the model
// answers only after all ten were handled). Each turn costs 2 tokens (the
// fake model's usage) against a daily budget of 3 with an estimate of 2:
// checked before and charged after, all ten ran (20 tokens, 6.7 times the
// budget); with holds, turns run only while the budget has room for
// their estimates, so the spend passes it by at most one estimate.
func TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurn(t *testing.T) {
	const budget, perTurn = 3, 2
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Daily: limits.Budget{Tokens: budget}}
	cfg.TurnEstimate = limits.Budget{Tokens: perTurn}
	clk := &limitClock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	var lim *limits.Limiter
	h := newHarness(t, "", nil, withLimits(t, cfg, clk, &lim))
	release := make(chan struct{})
	h.m.mu.Lock()
	h.m.block = release
	h.m.mu.Unlock()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
	)
	for i := range 10 {
		msg := in("tg", fmt.Sprintf("-10%d", i), fmt.Sprintf("room %d", i))
		msg.ChatType, msg.SenderID, msg.SenderName = channels.Group, "1", "u1"
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := h.d.Handle(h.ctx, msg)
			switch {
			case err == nil:
				mu.Lock()
				accepted++
				mu.Unlock()
			case !errors.Is(err, channels.ErrRejected):
				t.Errorf("Handle(%q): %v", msg.Text, err)
			}
		}()
	}
	wg.Wait()
	close(release)
	h.drained()
	spent := perTurn * len(h.m.requests())
	t.Logf("10 rooms at once: %d accepted, %d turns ran, %d tokens spent of a %d budget (%.1f× the budget)",
		accepted, len(h.m.requests()), spent, budget, float64(spent)/budget)
	if spent > budget+perTurn {
		t.Errorf("spent %d tokens of a %d budget: more than one turn's estimate (%d) over", spent, budget, perTurn)
	}
	if spent < budget {
		t.Errorf("spent %d tokens: the budget (%d) refused turns it had room for", spent, budget)
	}
}
