package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// BenchmarkAcceptBatch accepts a Telegram-sized batch of 100 records one
// after the other, as the poller does: "sync" waits for each commit's WAL
// flush (Accept), "deferred" commits each lazily and waits once for the
// batch (AcceptDeferred). µs/msg is the cost per record.
func BenchmarkAcceptBatch(b *testing.B) {
	const batch = 100
	for _, mode := range []string{"sync", "deferred"} {
		b.Run(mode, func(b *testing.B) {
			d := benchDelivery(b)
			ctx := context.Background()
			n := 0
			start := time.Now()
			for b.Loop() {
				var waits []func() error
				for range batch {
					rec := record(fmt.Sprint("r", n))
					n++
					if mode == "sync" {
						if _, err := d.Accept(ctx, rec); err != nil {
							b.Fatal(err)
						}
						continue
					}
					_, wait, err := d.AcceptDeferred(ctx, rec)
					if err != nil {
						b.Fatal(err)
					}
					waits = append(waits, wait)
				}
				for _, w := range waits {
					if err := w(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "µs/msg")
		})
	}
}

// BenchmarkTurnWrites is the index and transcript writes of one turn on a
// fresh session, as the runner makes them: Begin (a lazy touch), the
// input (AppendLazy) and its counters, the reply (a synchronous Append)
// and its counters.
func BenchmarkTurnWrites(b *testing.B) {
	db := openBench(b, 8)
	ctx := context.Background()
	st := db.Store("main", nil)
	key := mustKey(b, "main", "telegram", "7")
	e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram"})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", To: "7"}); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.AppendLazy(ctx, text(sessions.RoleUser, "hi")); err != nil {
			b.Fatal(err)
		}
		st.AddCounters(key, sessions.Counters{Messages: 1})
		if _, err := tr.Append(ctx, text(sessions.RoleAssistant, "hello")); err != nil {
			b.Fatal(err)
		}
		st.AddCounters(key, sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Messages: 1})
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkContextAfterTurn rebuilds the context of a 400-message session
// after each turn appended two more: "cached" extends the chain kept by
// the previous Context, "rebuild" decodes the transcript again (what
// every turn did before the cache).
func BenchmarkContextAfterTurn(b *testing.B) {
	for _, mode := range []string{"cached", "rebuild"} {
		b.Run(mode, func(b *testing.B) {
			db := openBench(b, 4)
			ctx := context.Background()
			tr, err := db.Transcript(sidA, transcript.Header{SessionKey: "agent:main:main", AgentID: "main"})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 200 {
				if _, err := tr.Append(ctx, text(sessions.RoleUser, fmt.Sprint("q", i)), text(sessions.RoleAssistant, "a reply of some length")); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := tr.Context(ctx); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				b.StopTimer()
				if _, err := tr.Append(ctx, text(sessions.RoleUser, "q"), text(sessions.RoleAssistant, "a")); err != nil {
					b.Fatal(err)
				}
				if mode == "rebuild" {
					db.chains.drop(sidA)
				}
				b.StartTimer()
				t0 := time.Now()
				if _, err := tr.Context(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat)
		})
	}
}
