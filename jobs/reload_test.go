package jobs

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// countingJobs counts the scheduler's claims.
type countingJobs struct {
	sessions.Jobs
	claims atomic.Int64
}

func (c *countingJobs) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, n int) ([]sessions.Job, time.Time, error) {
	c.claims.Add(1)
	return c.Jobs.ClaimDueJobs(ctx, now, owner, lease, n)
}

// TestSetPollApplies: a scheduler started with an hour's poll claims once
// and sleeps; SetPoll (a reloaded jobs.poll) shortens the sleep from the
// next one on, so it claims again and again.
func TestSetPollApplies(t *testing.T) {
	store := &countingJobs{Jobs: filestore.NewJobs(t.TempDir(), 0)}
	s, err := New(Options{Store: store, Deliver: newInbox().deliver, Owner: "a", Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }() // owned by this test: cancelled and waited below
	defer func() { cancel(); <-done }()

	waitClaims := func(n int64, what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for store.claims.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d claims, want at least %d", what, store.claims.Load(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitClaims(1, "the first claim at start")
	time.Sleep(50 * time.Millisecond)
	if n := store.claims.Load(); n != 1 {
		t.Fatalf("%d claims within the hour's poll, want 1", n)
	}
	s.SetPoll(5 * time.Millisecond)
	s.Wake() // ends the hour's sleep, as the daemon's reload does
	waitClaims(5, "after SetPoll(5ms)")
}

// TestSetGraceApplies: an occurrence 5 minutes late fires within the
// default grace window and is missed once SetGrace (a reloaded
// jobs.grace) narrowed it to a minute.
func TestSetGraceApplies(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	b := newInbox()
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("wide", sessions.JobSchedule{At: t0.Add(time.Minute)}, t0))
	s := newScheduler(t, store, c, b, "a")
	c.Set(t0.Add(6 * time.Minute)) // wide is 5m late
	tick(t, s)
	if got := b.ids(); len(got) != 1 {
		t.Fatalf("delivered %v, want wide (5m late, grace 10m)", got)
	}
	add(t, store, job("narrow", sessions.JobSchedule{At: t0.Add(7 * time.Minute)}, t0))
	s.SetGrace(time.Minute)
	c.Set(t0.Add(12 * time.Minute)) // narrow is 5m late
	tick(t, s)
	if got := b.ids(); len(got) != 1 {
		t.Fatalf("delivered %v, want nothing more once the grace is 1m", got)
	}
	if j := getJob(t, store, "narrow"); j.State != sessions.JobMissed || !strings.Contains(j.Note, "grace window of 1m0s") {
		t.Errorf("narrow: state %s note %q, want missed past the 1m grace window", j.State, j.Note)
	}
}
