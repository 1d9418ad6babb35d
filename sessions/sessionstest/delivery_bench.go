package sessionstest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// The Delivery benchmarks, run against each backend's journal (files:
// filestore.BenchmarkJournal*, PostgreSQL: pgstore.BenchmarkDelivery*), so
// the figures compare side by side. Each reports p50 and p99 of one
// iteration in microseconds.

// BenchAcceptDone is one message's ingress: Accept (durable) then Done.
func BenchAcceptDone(b *testing.B, d sessions.Delivery) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1024)
	i := 0
	for b.Loop() {
		id := fmt.Sprint("bench:", i)
		start := time.Now()
		if dup, err := d.Accept(ctx, record(id)); err != nil || dup {
			b.Fatalf("Accept(%s) = %v, %v", id, dup, err)
		}
		if err := d.Done(id); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	reportLatency(b, lat)
}

// BenchReadySent is one turn's outcome: Ready (a reply of two chunks
// answering an accepted record) then Sent per chunk, the last completing
// the reply and its record. The Accept is outside the timing.
func BenchReadySent(b *testing.B, d sessions.Delivery) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1024)
	i := 0
	for b.Loop() {
		id := fmt.Sprint("bench:", i)
		b.StopTimer()
		if _, err := d.Accept(ctx, record(id)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rp := reply("rp:"+id, []string{id}, "first chunk", "second chunk")
		if err := d.Ready(rp); err != nil {
			b.Fatal(err)
		}
		for n := 1; n <= len(rp.Chunks); n++ {
			if err := d.Sent(rp.ID, n); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, time.Since(start))
		i++
	}
	reportLatency(b, lat)
}

// BenchAcceptParallel is BenchAcceptDone from 8 goroutines per CPU at
// once (many chats): concurrent Accepts share fsyncs or WAL flushes.
func BenchAcceptParallel(b *testing.B, d sessions.Delivery) {
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("bench:", n.Add(1))
			if dup, err := d.Accept(ctx, record(id)); err != nil || dup {
				b.Errorf("Accept(%s) = %v, %v", id, dup, err)
				return
			}
			if err := d.Done(id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
