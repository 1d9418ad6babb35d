package limits

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// recordReserver grants every hold and records the holds settled.
type recordReserver struct {
	sessions.LimitCounters
	mu       sync.Mutex
	released []string
}

func (r *recordReserver) ReserveLimits(ctx context.Context, h sessions.LimitHold) (sessions.LimitReserveResult, error) {
	return sessions.LimitReserveResult{Granted: true}, nil
}

func (r *recordReserver) SettleLimits(ctx context.Context, d []sessions.LimitDelta, release []string) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	r.mu.Lock()
	r.released = append(r.released, release...)
	r.mu.Unlock()
	return r.LimitCounters.AddUsage(ctx, d)
}

// At shutdown (Run's context ends, after the in-flight turns settled) the
// holds of messages that got no turn in this process — queued ones,
// replayed at the next start without a hold — are dropped from the store
// with the last flush. On main they stayed there until they expired
// (15 min), counting against their senders' budgets beside the real cost
// of the replayed turns: TestShutdownDropsStoreHolds fails with nothing
// released.
func TestShutdownDropsStoreHolds(t *testing.T) {
	r := &recordReserver{LimitCounters: filestore.NewLimits(t.TempDir(), 0)}
	clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	cfg := withDefaults(Scope{Daily: Budget{Tokens: 1_000_000}}, Scope{}, Scope{})
	l, err := New(cfg, nil, Options{Counters: r, Logger: zaptest.NewLogger(t), Now: clk.now, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d := l.Check(context.Background(), alice)
	if !d.Allow || d.Hold == "" {
		t.Fatalf("check: %+v, want allowed with a hold", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.released, d.Hold) {
		t.Fatalf("released at shutdown: %v, want the hold %s", r.released, d.Hold)
	}
}
