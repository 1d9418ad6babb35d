package limits

import (
	"strings"
	"testing"
	"time"
)

// A sender told to slow down who waits as told and then meets its
// budget hears that too: notices are kept one per reason (scope and
// kind) per noticeEvery, not one per sender and room whatever the reason.
// On main the budget refusal at 60 s came without a notice (the rate's,
// 59 s before, silenced it), so the member, having waited as asked, was
// refused with no word why. A flood still gets one notice per reason.
func TestNoticeOfANewReasonIsNotSilenced(t *testing.T) {
	cfg := withDefaults(Scope{Rate: "1/min", Daily: Budget{Tokens: 100}}, Scope{}, Scope{})
	cfg.TurnEstimate = Budget{Tokens: 1}
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r := newRig(t, cfg, nil, start)
	d := r.check(alice)
	if !d.Allow {
		t.Fatalf("first: %+v", d)
	}
	r.clk.add(time.Second)
	if d := r.check(alice); d.Allow || d.Kind != KindRate || !strings.Contains(d.Notice, "Slow down") {
		t.Fatalf("second: %+v, want a rate refusal with its notice", d)
	}
	if d := r.check(alice); d.Notice != "" {
		t.Fatalf("third in the flood: notice %q, want none", d.Notice)
	}
	u := usageOf(alice, 100, 0)
	u.Holds = []string{d.Hold}
	r.l.Charge(u)
	r.clk.add(59 * time.Second)
	d = r.check(alice)
	if d.Allow || d.Kind != KindDaily || !strings.Contains(d.Notice, "today's limit") {
		t.Fatalf("after waiting as told: %+v, want a daily refusal with its notice", d)
	}
	if d := r.check(alice); d.Notice != "" {
		t.Fatalf("next in the flood: notice %q, want none", d.Notice)
	}
}
