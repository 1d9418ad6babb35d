package limits_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// The attack of issue 22: one sender posts in ten rooms at once. Each
// message is checked before its turn and charged after it, so all ten
// passed a daily budget that had room for four turns (3.7 times the
// budget was spent). With holds, the ten turns together pass the budget
// by at most one turn's estimate.

const (
	overshootBudget = 1000 // the sender's daily tokens
	turnTokens      = 300  // what the fake model's turn costs, and the estimate
	rooms           = 10
)

// tenRoomsAtOnce runs the attack over replicas (limiters on one store):
// every room's message is checked before any turn is charged, then each
// admitted turn is charged turnTokens. It returns how many turns ran and
// the sender's stored total after every replica flushed.
func tenRoomsAtOnce(t *testing.T, store sessions.LimitCounters, replicas []*limits.Limiter, now time.Time) (admitted int, total int64) {
	t.Helper()
	ctx := context.Background()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		checked sync.WaitGroup
	)
	checked.Add(rooms)
	for i := range rooms {
		l := replicas[i%len(replicas)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := limits.Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: fmt.Sprintf("-10%d", i)}
			d := l.Check(ctx, who)
			checked.Done()
			checked.Wait() // every message is checked before any turn ends
			if !d.Allow {
				return
			}
			mu.Lock()
			admitted++
			mu.Unlock()
			l.Charge(limits.Usage{AgentID: "main", Channel: "telegram", ChatID: who.ChatID, Senders: []string{"1"},
				Tokens: turnTokens, Holds: []string{d.Hold}})
		}()
	}
	wg.Wait()
	for _, l := range replicas {
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).Unix()
	key := sessions.LimitKey{Scope: limits.ScopeSender, Subject: "main/telegram:1", Period: "day", Start: day}
	got, err := store.LimitUsage(ctx, []sessions.LimitKey{key})
	if err != nil {
		t.Fatal(err)
	}
	return admitted, got[key].Tokens
}

func overshootConfig() limits.Config {
	cfg := limits.Default()
	cfg.Defaults.Sender = limits.Scope{Daily: limits.Budget{Tokens: overshootBudget}}
	cfg.TurnEstimate = limits.Budget{Tokens: turnTokens}
	return cfg
}

func checkOvershoot(t *testing.T, admitted int, total int64) {
	t.Helper()
	t.Logf("%d rooms at once: %d turns ran, %d tokens spent of a %d budget (overshoot %d, %.2f× the budget)",
		rooms, admitted, total, overshootBudget, total-overshootBudget, float64(total)/overshootBudget)
	if total > overshootBudget+turnTokens {
		t.Errorf("spent %d tokens of a %d budget: more than one turn's estimate (%d) over", total, overshootBudget, turnTokens)
	}
	if total < overshootBudget {
		t.Errorf("spent %d tokens: the budget (%d) stopped turns it had room for", total, overshootBudget)
	}
}

// TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurn: the files backend (one
// daemon owns the counters; its holds are in memory).
func TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurn(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	store := filestore.NewLimits(t.TempDir(), 0)
	l, err := limits.New(overshootConfig(), nil, limits.Options{Counters: store, Logger: zaptest.NewLogger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	admitted, total := tenRoomsAtOnce(t, store, []*limits.Limiter{l}, now)
	checkOvershoot(t, admitted, total)
}

// TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurnPostgres: two replicas
// on one database take the ten rooms' messages alternately; the holds are
// taken in the database, so the replicas admit against one count.
func TestBudgetTenRoomsAtOnceOvershootsAtMostOneTurnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var replicas []*limits.Limiter
	var store sessions.LimitCounters
	for range 2 {
		db, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, MaxConns: 8, Logger: zaptest.NewLogger(t),
			Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		store = db.Limits()
		l, err := limits.New(overshootConfig(), nil, limits.Options{Counters: store, Logger: zaptest.NewLogger(t), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, l)
	}
	admitted, total := tenRoomsAtOnce(t, store, replicas, now)
	checkOvershoot(t, admitted, total)
}

// TestBudgetHoldOfAKilledReplicaExpires: a replica killed between its
// check and its turn's charge leaves its hold in the database; the other
// replicas count it (they refuse while it would pass the budget) until it
// expires, and not after: a crash never holds budget for good.
func TestBudgetHoldOfAKilledReplicaExpires(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var (
		mu  sync.Mutex
		now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	open := func() (*limits.Limiter, sessions.LimitCounters) {
		db, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, MaxConns: 4, Logger: zaptest.NewLogger(t), Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		l, err := limits.New(overshootConfig(), nil, limits.Options{Counters: db.Limits(), Logger: zaptest.NewLogger(t), Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return l, db.Limits()
	}
	ctx := context.Background()
	killed, store := open()
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	key := sessions.LimitKey{Scope: limits.ScopeSender, Subject: "main/telegram:1", Period: "day", Start: day.Unix()}
	if _, err := store.AddUsage(ctx, []sessions.LimitDelta{{Key: key, End: day.AddDate(0, 0, 1).Unix(), Tokens: overshootBudget - turnTokens}}); err != nil {
		t.Fatal(err)
	}
	who := limits.Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: "-100"}
	if d := killed.Check(ctx, who); !d.Allow || d.Hold == "" {
		t.Fatalf("the first check at %d of %d: %+v, want allowed with a hold", overshootBudget-turnTokens, overshootBudget, d)
	}
	// killed dies here: no charge, no release, no flush.
	other, _ := open()
	if d := other.Check(ctx, who); d.Allow {
		t.Fatalf("another replica allowed while the killed one's hold (%d) fills the budget: %+v", turnTokens, d)
	}
	mu.Lock()
	now = now.Add(16 * time.Minute)
	mu.Unlock()
	if d := other.Check(ctx, who); !d.Allow {
		t.Fatalf("the killed replica's hold still counts after it expired: %+v", d)
	}
}
