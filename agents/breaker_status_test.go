package agents

import (
	"errors"
	"testing"
	"time"
)

// TestBreakerStatus: closed with the failures counted, open until the
// cool-down ends, half-open after it, closed again on success with the
// last error kept.
func TestBreakerStatus(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := NewBreaker(2, time.Minute, clock.now)
	if st := b.Status("oa"); st.State != BreakerClosed || st.LastError != "" {
		t.Fatalf("fresh: %+v", st)
	}
	b.FailureErr("oa", errors.New("502 bad gateway"))
	if st := b.Status("oa"); st.State != BreakerClosed || st.Failures != 1 || st.LastError != "502 bad gateway" {
		t.Fatalf("one failure: %+v", st)
	}
	b.FailureErr("oa", errors.New("timeout"))
	st := b.Status("oa")
	if st.State != BreakerOpen || !st.OpenUntil.Equal(clock.t.Add(time.Minute)) || st.LastError != "timeout" {
		t.Fatalf("opened: %+v", st)
	}
	clock.advance(time.Minute)
	if st := b.Status("oa"); st.State != BreakerHalfOpen {
		t.Fatalf("after the cool-down: %+v", st)
	}
	if !b.Allow("oa") {
		t.Fatal("trial refused")
	}
	if st := b.Status("oa"); st.State != BreakerOpen {
		t.Fatalf("trial out: want open (no second trial), got %+v", st)
	}
	b.Success("oa")
	if st := b.Status("oa"); st.State != BreakerClosed || st.Failures != 0 || st.LastError != "timeout" {
		t.Fatalf("closed again: %+v", st)
	}
}
