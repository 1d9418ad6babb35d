package sessionstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// BenchLimits measures budget counters holding 10,000 counters (5,000
// senders' day and month): Flush is one AddUsage of a batch of 30 charges
// (what the limiter writes once a second under load: 10 turns' sender,
// room and agent counters of one window), Refresh one LimitUsage of 300
// keys (the counters checks use, re-read at each flush). Each backend
// calls it from a benchmark of its own.
func BenchLimits(b *testing.B, l sessions.LimitCounters) {
	ctx := context.Background()
	var seed []sessions.LimitDelta
	for i := range 5000 {
		s := fmt.Sprint("main/telegram:", i)
		seed = append(seed, dayDelta("sender", s, 100, 0.01),
			sessions.LimitDelta{Key: sessions.LimitKey{Scope: "sender", Subject: s, Period: "month", Start: limitDayStart},
				End: limitDayEnd + 30*86400, Tokens: 100})
	}
	if _, err := l.AddUsage(ctx, seed); err != nil {
		b.Fatal(err)
	}
	b.Run("Flush30", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			batch := make([]sessions.LimitDelta, 0, 30)
			for range 10 {
				n++
				batch = append(batch, dayDelta("sender", fmt.Sprint("main/telegram:", n%5000), 500, 0.001),
					dayDelta("room", fmt.Sprint("main/telegram:-", n%50), 500, 0.001), dayDelta("agent", "main", 500, 0.001))
			}
			if _, err := l.AddUsage(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Refresh300", func(b *testing.B) {
		keys := make([]sessions.LimitKey, 300)
		for i := range keys {
			keys[i] = dayKey("sender", fmt.Sprint("main/telegram:", i*7))
		}
		b.ReportAllocs()
		for b.Loop() {
			got, err := l.LimitUsage(ctx, keys)
			if err != nil || len(got) != len(keys) {
				b.Fatalf("LimitUsage = %d, %v", len(got), err)
			}
		}
	})
}
