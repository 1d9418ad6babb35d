package limits_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestBudgetsSharedByReplicasPostgres: three limiters (three replicas)
// on one database charge one agent's monthly budget concurrently; after
// their flushes each one's view holds every charge, so all refuse; a
// fourth one opened afterwards (a restart) refuses too.
func TestBudgetsSharedByReplicasPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := limits.Default()
	cfg.Defaults.Agent = limits.Scope{Monthly: limits.Budget{CostUSD: 3}}
	now := func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
	open := func() *limits.Limiter {
		db, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, MaxConns: 4, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		l, err := limits.New(cfg, nil, limits.Options{Counters: db.Limits(), Logger: zaptest.NewLogger(t), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	who := limits.Subject{AgentID: "main", Channel: "telegram", SenderID: "1", ChatID: "-100"}
	ctx := context.Background()
	replicas := []*limits.Limiter{open(), open(), open()}
	var wg sync.WaitGroup
	for _, l := range replicas {
		if d := l.Check(ctx, who); !d.Allow {
			t.Fatalf("before any charge: %+v", d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				l.Charge(limits.Usage{AgentID: "main", Channel: "telegram", ChatID: "-100", Senders: []string{"1"}, Tokens: 10, CostUSD: 0.01})
			}
			if err := l.Flush(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, l := range replicas {
		if err := l.Flush(ctx); err != nil { // re-reads what the others wrote since
			t.Fatal(err)
		}
		if d := l.Check(ctx, who); d.Allow || d.Scope != limits.ScopeAgent || d.Kind != limits.KindMonthly {
			t.Errorf("replica %d after 300 × $0.01: %+v, want refused by the agent's monthly budget", i, d)
		}
	}
	if d := open().Check(ctx, who); d.Allow {
		t.Errorf("a restarted replica allows: %+v", d)
	}
}
