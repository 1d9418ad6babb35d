package limits

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// gateReserver is a LimitReserver over a files store that grants every
// hold; the first ReserveLimits says it entered and waits to be let go.
type gateReserver struct {
	sessions.LimitCounters
	mu      sync.Mutex
	calls   int
	entered chan struct{}
	release chan struct{}
}

func (g *gateReserver) ReserveLimits(ctx context.Context, h sessions.LimitHold) (sessions.LimitReserveResult, error) {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	return sessions.LimitReserveResult{Granted: true}, nil
}

func (g *gateReserver) SettleLimits(ctx context.Context, d []sessions.LimitDelta, release []string) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	return g.LimitCounters.AddUsage(ctx, d)
}

// A message whose budget hold is being taken in the store has its rate
// token already: a second message checked meanwhile is refused by a
// bucket of one, not admitted on the same token (on main both were
// allowed, leaving the bucket at -1).
func TestRateTokenTakenBeforeStoreHold(t *testing.T) {
	g := &gateReserver{LimitCounters: filestore.NewLimits(t.TempDir(), 0), entered: make(chan struct{}), release: make(chan struct{})}
	clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	cfg := withDefaults(Scope{Rate: "1/min", Daily: Budget{Tokens: 1_000_000}}, Scope{}, Scope{})
	l, err := New(cfg, nil, Options{Counters: g, Logger: zaptest.NewLogger(t), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan Decision)
	go func() { first <- l.Check(context.Background(), alice) }()
	<-g.entered
	second := l.Check(context.Background(), alice)
	close(g.release)
	d1 := <-first
	if !d1.Allow {
		t.Fatalf("first message refused: %+v", d1)
	}
	if second.Allow || second.Kind != KindRate {
		t.Fatalf("second message on a bucket of one: %+v, want a rate refusal", second)
	}
}

// A message the store refuses (its budget reached on another replica)
// gives its rate token back: the sender's next message is judged on the
// budget again, not refused for a rate it did not use.
func TestStoreRefusalGivesRateTokenBack(t *testing.T) {
	store := filestore.NewLimits(t.TempDir(), 0)
	clk := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	r := &refuseReserver{LimitCounters: store}
	cfg := withDefaults(Scope{Rate: "1/min", Daily: Budget{Tokens: 1_000_000}}, Scope{}, Scope{})
	l, err := New(cfg, nil, Options{Counters: r, Logger: zaptest.NewLogger(t), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	r.refuse = true
	if d := l.Check(context.Background(), alice); d.Allow || d.Kind != KindDaily {
		t.Fatalf("store refusal: %+v, want a daily refusal", d)
	}
	r.refuse = false
	if d := l.Check(context.Background(), alice); !d.Allow {
		t.Fatalf("after a store refusal: %+v, want allowed (the refused message took no rate token)", d)
	}
}

type refuseReserver struct {
	sessions.LimitCounters
	refuse bool
}

func (r *refuseReserver) ReserveLimits(ctx context.Context, h sessions.LimitHold) (sessions.LimitReserveResult, error) {
	if r.refuse {
		return sessions.LimitReserveResult{Over: h.Items[0].Key}, nil
	}
	return sessions.LimitReserveResult{Granted: true}, nil
}

func (r *refuseReserver) SettleLimits(ctx context.Context, d []sessions.LimitDelta, release []string) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	return r.LimitCounters.AddUsage(ctx, d)
}
