package agents

import (
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestBreakerOpensAfterThresholdAndClosesAfterCooldown(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := NewBreaker(3, time.Minute, clock.now)

	for i := 1; i <= 2; i++ {
		if !b.Allow("oa") {
			t.Fatalf("failure %d: refused before the threshold", i)
		}
		if b.Failure("oa") {
			t.Fatalf("failure %d of 3 opened the breaker", i)
		}
	}
	if !b.Allow("oa") || !b.Failure("oa") {
		t.Fatal("third consecutive failure: want the breaker to open")
	}
	if b.Allow("oa") || !b.Open("oa") {
		t.Fatal("open breaker let a call through")
	}
	if !b.Allow("other") {
		t.Fatal("one provider's breaker refused another provider")
	}
	clock.advance(59 * time.Second)
	if b.Allow("oa") {
		t.Fatal("call let through before the cool-down ended")
	}
	clock.advance(time.Second)
	if !b.Allow("oa") {
		t.Fatal("no trial call after the cool-down")
	}
	if b.Allow("oa") {
		t.Fatal("a second call let through while the trial is out")
	}
	// A failed trial reopens for a whole cool-down.
	if !b.Failure("oa") {
		t.Fatal("failed trial: want the breaker reopened")
	}
	clock.advance(30 * time.Second)
	if b.Allow("oa") {
		t.Fatal("reopened breaker let a call through")
	}
	clock.advance(30 * time.Second)
	if !b.Allow("oa") {
		t.Fatal("no trial after the second cool-down")
	}
	b.Success("oa")
	if b.Open("oa") || !b.Allow("oa") || !b.Allow("oa") {
		t.Fatal("successful trial: want the breaker closed")
	}
	// Closed again, it counts from zero.
	b.Failure("oa")
	b.Failure("oa")
	if b.Open("oa") {
		t.Fatal("two failures after closing opened the breaker")
	}
}

func TestBreakerSuccessResetsTheCount(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	b := NewBreaker(3, time.Minute, clock.now)
	b.Failure("oa")
	b.Failure("oa")
	b.Success("oa")
	b.Failure("oa")
	b.Failure("oa")
	if b.Open("oa") {
		t.Fatal("failures that were not consecutive opened the breaker")
	}
}

func TestBreakerAbandonedTrialAllowsAnother(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	b := NewBreaker(1, time.Minute, clock.now)
	b.Failure("oa")
	clock.advance(time.Minute)
	if !b.Allow("oa") {
		t.Fatal("no trial after the cool-down")
	}
	b.Abandon("oa") // the turn was cancelled: nothing learnt
	if !b.Open("oa") || !b.Allow("oa") {
		t.Fatal("abandoned trial: want the breaker still open and a new trial allowed")
	}
}

// BenchmarkBreakerAllow is the breaker's cost on every model call.
func BenchmarkBreakerAllow(b *testing.B) {
	br := NewBreaker(3, time.Minute, nil)
	b.ReportAllocs()
	for b.Loop() {
		if br.Allow("oa") {
			br.Success("oa")
		}
	}
}
