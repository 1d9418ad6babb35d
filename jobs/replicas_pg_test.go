package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestPostgresTwoReplicasFireEachJobOnce runs 100 one-shot jobs due over
// two seconds on two schedulers, each with its own backend (pool and
// replica) on one database, delivering into the real ingress journal as
// the daemon does. Replica A dies after its 20th delivery: between the
// journal write and the settle, holding claims on jobs it has not
// fired. Every job must end done and its occurrence be accepted by the
// journal exactly once: B takes A's claims when they run out, and the
// repeat of the occurrence A delivered but did not settle is a duplicate.
func TestPostgresTwoReplicasFireEachJobOnce(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func(id string) *pgstore.Backend {
		b, err := pgstore.OpenBackend(ctx, pgstore.BackendOptions{
			Options:   pgstore.Options{URL: url, MaxConns: 6, Logger: zaptest.NewLogger(t)},
			ReplicaID: id, KeepLeasesOnStop: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	backA, backB := open("replica-a"), open("replica-b")
	t.Cleanup(func() { _ = backB.Close() })

	const n = 100
	t0 := time.Now()
	for i := range n {
		j := job(fmt.Sprintf("j%03d", i), sessions.JobSchedule{At: t0.Add(time.Duration(i+1) * 20 * time.Millisecond)}, t0)
		add(t, backA.Jobs(), j)
	}

	var (
		mu       sync.Mutex
		accepted = map[string]int{}
		dups     int
	)
	deliverVia := func(back *pgstore.Backend, die func(int) bool) Deliver {
		calls := 0
		return func(ctx context.Context, j sessions.Job, at time.Time, id string) error {
			dup, err := back.Journal().Accept(ctx, sessions.Record{ID: id, AgentID: j.AgentID, SessionKey: j.SessionKey,
				Payload: json.RawMessage(`{}`), AcceptedAt: time.Now()})
			if err != nil {
				return err
			}
			mu.Lock()
			if dup {
				dups++
			} else {
				accepted[id]++
			}
			mu.Unlock()
			calls++
			if die(calls) {
				return fmt.Errorf("replica died after delivering %s", id)
			}
			return nil
		}
	}
	ctxA, killA := context.WithCancel(ctx)
	ctxB, stopB := context.WithCancel(ctx)
	run := func(ctx context.Context, back *pgstore.Backend, owner string, deliver Deliver) (*Scheduler, chan error) {
		s, err := New(Options{Store: back.Jobs(), Deliver: deliver, Owner: owner, Poll: 20 * time.Millisecond,
			Lease: time.Second, Batch: 10, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		return s, done
	}
	_, doneA := run(ctxA, backA, "replica-a", deliverVia(backA, func(calls int) bool {
		if calls == 20 {
			killA() // dies here: this occurrence is in the journal, its job not settled
			return true
		}
		return false
	}))
	_, doneB := run(ctxB, backB, "replica-b", deliverVia(backB, func(int) bool { return false }))
	<-doneA
	_ = backA.Close()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		js, err := backB.Jobs().ListJobs(ctx, sessions.JobFilter{Active: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(js) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still active after two minutes", len(js))
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopB()
	<-doneB

	js, err := backB.Jobs().ListJobs(ctx, sessions.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, j := range js {
		id := OccurrenceID(j.ID, j.NextAt)
		if j.State != sessions.JobDone || j.Fires != 1 {
			t.Errorf("job %s: state %s fires %d", j.ID, j.State, j.Fires)
		}
		if accepted[id] != 1 {
			t.Errorf("occurrence %s accepted %d times", id, accepted[id])
		}
	}
	if len(accepted) != n {
		t.Errorf("%d occurrences accepted, want %d", len(accepted), n)
	}
	if dups < 1 {
		t.Errorf("no duplicate delivery: replica A's unsettled occurrence was not retried")
	}
	t.Logf("%d occurrences accepted once each, %d repeats dropped as duplicates", len(accepted), dups)
}

// takeoverAfterClaim is replica A's store: once A has claimed its batch,
// A stalls past its lease (the clock moves on) and replica B claims the
// same jobs, as happens when A's journal writes are slow.
type takeoverAfterClaim struct {
	sessions.Jobs
	b     sessions.Jobs
	clock *clock
	lease time.Duration
}

func (s takeoverAfterClaim) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, n int) ([]sessions.Job, time.Time, error) {
	claimed, next, err := s.Jobs.ClaimDueJobs(ctx, now, owner, lease, n)
	if err != nil || len(claimed) == 0 {
		return claimed, next, err
	}
	s.clock.Set(now.Add(s.lease + time.Second))
	if taken, _, err := s.b.ClaimDueJobs(ctx, s.clock.Now(), "replica-b", s.lease, n); err != nil || len(taken) != len(claimed) {
		return nil, time.Time{}, fmt.Errorf("replica b took %d of %d: %v", len(taken), len(claimed), err)
	}
	return claimed, next, nil
}

// TestPostgresLapsedClaimNotDeliveredByBoth: replica A claims due jobs,
// stalls past its lease, and replica B takes them over. A must not
// deliver the jobs it no longer holds (B does, once): the journal would
// drop A's repeat, but only while it remembers the id, and a cancel or a
// settle by B in between would make A's delivery wrong.
func TestPostgresLapsedClaimNotDeliveredByBoth(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func(id string) *pgstore.Backend {
		b, err := pgstore.OpenBackend(ctx, pgstore.BackendOptions{
			Options: pgstore.Options{URL: url, MaxConns: 4, Logger: zaptest.NewLogger(t)}, ReplicaID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	backA, backB := open("replica-a"), open("replica-b")
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	add(t, backA.Jobs(), job("once", sessions.JobSchedule{At: t0.Add(time.Minute)}, t0))
	add(t, backA.Jobs(), job("daily", sessions.JobSchedule{Cron: "1 9 * * *"}, t0))
	c.Set(t0.Add(time.Minute))
	b := newInbox()
	a, err := New(Options{Store: takeoverAfterClaim{Jobs: backA.Jobs(), b: backB.Jobs(), clock: c, lease: DefaultLease},
		Deliver: b.deliver, Owner: "replica-a", Now: c.Now, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	tick(t, a)
	if b.calls != 0 {
		t.Errorf("replica a delivered %v, jobs replica b holds", b.ids())
	}
	tick(t, newScheduler(t, backB.Jobs(), &clock{t: c.Now().Add(DefaultLease + time.Second)}, b, "replica-b"))
	if b.calls != 2 || len(b.ids()) != 2 {
		t.Errorf("deliveries %d of %v, want each job once (by replica b)", b.calls, b.ids())
	}
}
