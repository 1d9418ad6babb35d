package pgstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// openBench opens a store on a fresh database, without test logging.
func openBench(b *testing.B, maxConns int32) *DB {
	b.Helper()
	db, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(b), MaxConns: maxConns, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	return db
}

// reportLatency adds p50 and p99 of the samples, in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAppend is one durable (committed, WAL flushed) append of one
// transcript entry, one caller at a time.
func BenchmarkAppend(b *testing.B) {
	db := openBench(b, 4)
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		id := fmt.Sprint("m", i)
		t0 := time.Now()
		if _, err := db.Append(ctx, "bench-session", msg(id, "", "hello")); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	reportLatency(b, lat)
}

// BenchmarkAppendParallel appends from several goroutines at once, each
// to its own session, one commit per append (PostgreSQL still shares WAL
// flushes between concurrent commits). appenders = parallelism x GOMAXPROCS.
func BenchmarkAppendParallel(b *testing.B) {
	benchParallel(b, func(db *DB) (appendFunc, func()) { return db.Append, func() {} })
}

// BenchmarkAppenderParallel is BenchmarkAppendParallel through the
// Appender: concurrent appends across sessions share one commit.
func BenchmarkAppenderParallel(b *testing.B) {
	benchParallel(b, func(db *DB) (appendFunc, func()) {
		a := db.NewAppender(0)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		return a.Append, func() { cancel(); <-done }
	})
}

type appendFunc func(ctx context.Context, sessionID string, entries ...TranscriptEntry) ([]int64, error)

func benchParallel(b *testing.B, start func(*DB) (appendFunc, func())) {
	for _, par := range []int{2, 8} {
		b.Run(fmt.Sprintf("appenders=%d", par*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			db := openBench(b, int32(par*runtime.GOMAXPROCS(0)))
			appendFn, stop := start(db)
			defer stop()
			ctx := context.Background()
			var (
				mu  sync.Mutex
				lat []time.Duration
				g   int
			)
			b.SetParallelism(par)
			b.ResetTimer() // the database was created in this run
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				sid := fmt.Sprint("bench-", g)
				g++
				mu.Unlock()
				var mine []time.Duration
				for i := 0; pb.Next(); i++ {
					t0 := time.Now()
					if _, err := appendFn(ctx, sid, msg(fmt.Sprint("m", i), "", "hello")); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			reportLatency(b, lat)
		})
	}
}

// BenchmarkLoadAfterCompaction loads a 10,000-entry session whose latest
// compaction is near the end, among 100 other sessions: only the tail is
// read.
func BenchmarkLoadAfterCompaction(b *testing.B) {
	db := openBench(b, 4)
	ctx := context.Background()
	const sid, n = "long-session", 10_000
	var batch []TranscriptEntry
	parent := ""
	for i := 1; i <= n; i++ {
		id := fmt.Sprint("e", i)
		if i == n-50 {
			batch = append(batch, compaction(id, parent, fmt.Sprint("e", n-70)))
		} else {
			batch = append(batch, msg(id, parent, "some message text of a usual length, a sentence or two long"))
		}
		parent = id
		if len(batch) == 1000 || i == n {
			if _, err := db.Append(ctx, sid, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// Other sessions share the table, as in production (100 x 100 entries).
	for s := range 100 {
		var other []TranscriptEntry
		for i := range 100 {
			other = append(other, msg(fmt.Sprint("o", i), "", "x"))
		}
		if _, err := db.Append(ctx, fmt.Sprint("other-", s), other...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE transcript_entries`); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		tail, err := db.LoadFromLatestCompaction(ctx, sid)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if len(tail.Entries) != 71 {
			b.Fatalf("tail of %d entries, want 71", len(tail.Entries))
		}
	}
	reportLatency(b, lat)
}

// fillIndex creates n sessions of agent main and returns their keys.
func fillIndex(b *testing.B, x *Index, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		k := mustKey(b, "main", "telegram", fmt.Sprint(-1000000-i))
		if _, _, err := x.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "group", From: "42",
			Name: "Someone", Title: "a first message"}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := x.db.pool.Exec(ctx, `ANALYZE entries`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkList1000 lists an index of 1,000 sessions.
func BenchmarkList1000(b *testing.B) {
	db := openBench(b, 4)
	x := db.Index("main", nil)
	fillIndex(b, x, 1000)
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		all, err := x.List(ctx)
		if err != nil || len(all) != 1000 {
			b.Fatalf("List: %d entries, %v", len(all), err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkBeginExisting is Begin on a fresh existing session: the read
// and the conditional touch, the path of every inbound message.
func BenchmarkBeginExisting(b *testing.B) {
	db := openBench(b, 4)
	x := db.Index("main", idle)
	fillIndex(b, x, 100)
	k := mustKey(b, "main", "telegram", "-1000007")
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, info, err := x.Begin(ctx, k, sessions.Origin{Channel: "telegram", From: "42"}); err != nil || info.Created {
			b.Fatalf("Begin: %+v %v", info, err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkSeamTranscripts runs the backend-neutral transcript benchmarks
// (sessionstest.BenchmarkTranscripts) on PostgreSQL, beside the files
// backend's BenchmarkSeamTranscripts in package sessions. Appends go
// through the DB's group commit; a TranscriptLog caches nothing, so every
// Context is a cold load (one query from the latest compaction).
func BenchmarkSeamTranscripts(b *testing.B) {
	sessionstest.BenchmarkTranscripts(b, func(b *testing.B) sessionstest.BenchStore {
		db := openBench(b, 20)
		st := db.Store("main", nil)
		return sessionstest.BenchStore{Store: st, Cold: func(e sessions.Entry) (sessions.TranscriptLog, func(), error) {
			tr, err := st.TranscriptOf(e)
			return tr, func() {}, err
		}}
	})
}
