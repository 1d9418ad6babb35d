package limits

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions/filestore"
)

// BenchmarkCheckCharge is the per-message cost: Check of a message (rate
// buckets of sender, room and agent; daily and monthly budgets of each,
// in memory after the first read; the turn's hold taken) and the Charge
// of its turn (the hold dropped), over 1,000
// senders in 50 rooms. Flushes are not in it (they run once a second in
// the background).
func BenchmarkCheckCharge(b *testing.B) {
	cfg := withDefaults(
		Scope{Rate: "1000/s", Burst: 1000, Daily: Budget{Tokens: 1 << 40}, Monthly: Budget{CostUSD: 1e9}},
		Scope{Rate: "1000/s", Burst: 1000, Daily: Budget{CostUSD: 1e9}},
		Scope{Rate: "100000/s", Burst: 100000, Monthly: Budget{CostUSD: 1e9}})
	clk := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	l, err := New(cfg, nil, Options{Counters: filestore.NewLimits(b.TempDir(), 0), Now: clk.now})
	if err != nil {
		b.Fatal(err)
	}
	subs := make([]Subject, 1000)
	for i := range subs {
		subs[i] = Subject{AgentID: "main", Channel: "telegram", SenderID: strconv.Itoa(i), ChatID: "-" + strconv.Itoa(i%50)}
		l.Release(l.Check(context.Background(), subs[i]).Hold) // first read of its counters
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := subs[i%len(subs)]
		clk.add(time.Millisecond)
		d := l.Check(ctx, s)
		if !d.Allow {
			b.Fatalf("refused: %+v", d)
		}
		l.Charge(Usage{AgentID: s.AgentID, Channel: s.Channel, ChatID: s.ChatID, Senders: []string{s.SenderID}, Tokens: 500, CostUSD: 0.001,
			Holds: []string{d.Hold}})
	}
}

// BenchmarkCheckNoLimits is Check when the config sets no limit.
func BenchmarkCheckNoLimits(b *testing.B) {
	clk := &clock{t: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	l, err := New(Default(), nil, Options{Counters: filestore.NewLimits(b.TempDir(), 0), Now: clk.now})
	if err != nil {
		b.Fatal(err)
	}
	s := alice
	b.ReportAllocs()
	for b.Loop() {
		l.Check(context.Background(), s)
		l.Charge(usageOf(s, 500, 0.001))
	}
}
