package limits

import (
	"testing"
	"time"
)

// A reload that lowers a budget and changes the turn estimate while holds
// are outstanding: the lower budget binds at the next check, and each hold
// is dropped by the amount it took (not the new estimate), so the counter
// returns to zero, neither stuck above (refusing a sender with room) nor
// below (letting extra turns through).
func TestReloadLoweringBudgetWithHoldsOutstanding(t *testing.T) {
	cfg := withDefaults(Scope{Daily: Budget{Tokens: 100}}, Scope{}, Scope{})
	cfg.TurnEstimate = Budget{Tokens: 10}
	r := newRig(t, cfg, nil, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	h1 := r.check(alice)
	if !h1.Allow || h1.Hold == "" {
		t.Fatalf("first: %+v", h1)
	}
	cfg.Defaults.Sender.Daily.Tokens = 20
	cfg.TurnEstimate = Budget{Tokens: 50}
	if err := r.l.SetConfig(cfg, nil); err != nil {
		t.Fatal(err)
	}
	h2 := r.check(alice) // 10 held < 20: allowed, holds 50
	if !h2.Allow {
		t.Fatalf("second after lowering: %+v, want allowed (10 of 20 held)", h2)
	}
	if d := r.check(alice); d.Allow || d.Kind != KindDaily {
		t.Fatalf("third: %+v, want a daily refusal (60 of 20 held)", d)
	}
	r.l.Release(h1.Hold)
	if d := r.check(alice); d.Allow {
		t.Fatalf("after dropping the first hold: %+v, want refused (50 of 20 held)", d)
	}
	r.l.Release(h2.Hold)
	d := r.check(alice)
	if !d.Allow {
		t.Fatalf("after dropping both holds: %+v, want allowed (nothing spent)", d)
	}
	r.l.Release(d.Hold)
	r.flush()
	for k, c := range r.l.counters {
		if c.held.Tokens != 0 || c.held.CostUSD != 0 {
			t.Errorf("counter %v still holds %+v", k, c.held)
		}
	}
}
