package sessionstest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// BenchStore is what the transcript benchmarks need of a backend.
type BenchStore struct {
	// Store is a new, empty agent store ("main").
	Store sessions.AgentStore
	// Cold opens e's transcript as a process that just started would: no
	// cache of an earlier read (a new Manager on the state dir; for a
	// store that caches nothing, TranscriptOf). done releases it.
	Cold func(e sessions.Entry) (tr sessions.TranscriptLog, done func(), err error)
}

// BenchOpener returns a BenchStore released when b ends.
type BenchOpener func(b *testing.B) BenchStore

// BenchmarkTranscripts runs the same transcript benchmarks on a backend, so
// the figures of both sit side by side (SPEC §3.8, issue 12):
//
//   - AppendDurable: one message appended and durable, one caller;
//   - AppendDurableParallel: 16 callers, each appending to its own session
//     (commits grouped across sessions where the backend does that);
//   - LoadCompacted10k: the context of a 10,000-message session whose
//     latest compaction keeps the last 51, read cold.
//
// Each reports the p50 and p99 latency of the measured call.
func BenchmarkTranscripts(b *testing.B, open BenchOpener) {
	b.Run("AppendDurable", func(b *testing.B) { benchAppend(b, open(b).Store) })
	b.Run("AppendDurableParallel", func(b *testing.B) { benchAppendParallel(b, open(b).Store) })
	b.Run("LoadCompacted10k", func(b *testing.B) { benchLoad(b, open(b)) })
}

// ReportLatency adds the p50 and p99 of lat, in microseconds.
func ReportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

func benchSession(b *testing.B, st sessions.AgentStore, peer string) (sessions.Entry, sessions.TranscriptLog) {
	b.Helper()
	k, err := routing.PeerKey(st.AgentID(), "telegram", "", routing.Group, peer)
	if err != nil {
		b.Fatal(err)
	}
	e, _, err := st.Begin(context.Background(), k, origin(peer))
	if err != nil {
		b.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		b.Fatal(err)
	}
	return e, tr
}

const benchText = "a typical chat message of a few dozen characters, nothing more"

func benchAppend(b *testing.B, st sessions.AgentStore) {
	_, tr := benchSession(b, st, "serial")
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := tr.Append(ctx, userMsg(1, benchText)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	ReportLatency(b, lat)
}

func benchAppendParallel(b *testing.B, st sessions.AgentStore) {
	const callers = 16
	trs := make([]sessions.TranscriptLog, callers)
	for i := range trs {
		_, trs[i] = benchSession(b, st, fmt.Sprint("room", i))
	}
	ctx := context.Background()
	var (
		mu   sync.Mutex
		lat  []time.Duration
		next int
	)
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs) // about 16 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		tr := trs[next%callers]
		next++
		mu.Unlock()
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if _, err := tr.Append(ctx, userMsg(1, benchText)); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	ReportLatency(b, lat)
}

func benchLoad(b *testing.B, bs BenchStore) {
	const n, kept = 10_000, 51 // kept from an assistant message: nothing merges into the summary
	ctx := context.Background()
	e, tr := benchSession(b, bs.Store, "long")
	var ids []string
	batch := make([]sessions.Message, 0, 100)
	for i := range n {
		m := userMsg(i, benchText)
		if i%2 == 1 {
			m = replyMsg(i, benchText)
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			got, err := tr.Append(ctx, batch...)
			if err != nil {
				b.Fatal(err)
			}
			ids, batch = append(ids, got...), batch[:0]
		}
	}
	if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: "the story so far", FirstKeptEntryID: ids[n-kept]}); err != nil {
		b.Fatal(err)
	}
	// The runner records the compaction's position in the entry, as here.
	msgs, pos, err := tr.Stats(ctx)
	if err != nil || msgs != n {
		b.Fatalf("Stats = %d, %v", msgs, err)
	}
	k, err := routing.Parse(e.SessionKey)
	if err != nil {
		b.Fatal(err)
	}
	if e, err = bs.Store.Patch(ctx, k, func(x *sessions.Entry) error {
		x.CompactionOffset, x.MessageCount = pos, msgs
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		cold, done, err := bs.Cold(e)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		c, err := cold.Context(ctx)
		lat = append(lat, time.Since(t0))
		done()
		if err != nil || len(c.Messages) != kept+1 {
			b.Fatalf("Context: %d messages, %v; want the summary and %d", len(c.Messages), err, kept)
		}
	}
	ReportLatency(b, lat)
}
