package limits

import (
	"testing"
	"time"
)

// TestRefundGivesBackTheRate: a message allowed and then not accepted (a
// duplicate delivery, a refused journal write) gets its rate tokens back
// in every scope it took one from, never past the burst; a refused
// decision refunds nothing.
func TestRefundGivesBackTheRate(t *testing.T) {
	r := newRig(t, withDefaults(Scope{Rate: "1/min"}, Scope{Rate: "2/min"}, Scope{}), nil, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	d := r.check(alice)
	if !d.Allow {
		t.Fatalf("first: %+v", d)
	}
	if again := r.check(alice); again.Allow {
		t.Fatalf("second before the refund allowed: %+v", again)
	} else {
		r.l.Refund(again) // refused: nothing to give back
	}
	r.l.Refund(d)
	r.l.Refund(d) // twice: capped at the burst
	if d2 := r.check(alice); !d2.Allow {
		t.Fatalf("after the refund: %+v, want allowed", d2)
	}
	if d3 := r.check(alice); d3.Allow || d3.Scope != ScopeSender {
		t.Fatalf("after the refund and one message: %+v, want the sender's rate refused", d3)
	}
}
