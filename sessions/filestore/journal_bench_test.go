package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func benchJournal(b *testing.B) sessions.Delivery {
	b.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	return m.Journal()
}

// BenchmarkJournalAcceptDone: Accept (fsynced) + Done on the files journal.
func BenchmarkJournalAcceptDone(b *testing.B) { sessionstest.BenchAcceptDone(b, benchJournal(b)) }

// BenchmarkJournalReadySent: Ready + Sent of two chunks on the files journal.
func BenchmarkJournalReadySent(b *testing.B) { sessionstest.BenchReadySent(b, benchJournal(b)) }

// BenchmarkJournalAcceptParallel: Accept + Done from many goroutines on the files journal.
func BenchmarkJournalAcceptParallel(b *testing.B) {
	sessionstest.BenchAcceptParallel(b, benchJournal(b))
}

// dayOfDoneIDs writes a journal that remembers n done ids (a day of a bot
// answering n/86400 messages a second, sessions.DoneRetention) in the
// journal's own line format, as a rewrite leaves it, and returns its state
// dir.
func dayOfDoneIDs(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ingress"), 0o700); err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, `{"op":"done","ids":["telegram:main:-100123456789:%d"],"at":%q}`+"\n", i, at)
	}
	if err := os.WriteFile(filepath.Join(dir, "ingress", "journal.jsonl"), buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkJournalAcceptDoneDayOfIDs: Accept + Done on a journal that
// remembers 500,000 done ids (a day of ~6 messages a second), 36 MB of
// done lines.
func BenchmarkJournalAcceptDoneDayOfIDs(b *testing.B) {
	m, err := filestore.Open(filestore.Options{StateDir: dayOfDoneIDs(b, 500_000), Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	sessionstest.BenchAcceptDone(b, m.Journal())
}

// BenchmarkJournalOpenDayOfIDs: opening (replaying) a journal that
// remembers 500,000 done ids, what a restart of a busy bot does before it
// takes a message.
func BenchmarkJournalOpenDayOfIDs(b *testing.B) {
	dir := dayOfDoneIDs(b, 500_000)
	for b.Loop() {
		m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Journal().Health(); err != nil {
			b.Fatal(err)
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournalDoneIDsMemory: the live heap a journal that remembers
// 500,000 done ids holds for each (B/id), measured after a collection
// around its opening; -benchmem adds what the replay allocates.
func BenchmarkJournalDoneIDsMemory(b *testing.B) {
	const n = 500_000
	dir := dayOfDoneIDs(b, n)
	var perID float64
	for b.Loop() {
		before := liveHeap()
		m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Journal().Health(); err != nil {
			b.Fatal(err)
		}
		perID = float64(int64(liveHeap())-int64(before)) / n
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(perID, "B/id")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkJournalTurnsDuringRewrites: Accept + Done of 1 KB records from
// 8 goroutines on a journal that remembers 100,000 done ids (7 MB of done
// lines, a few hours of a busy bot), long enough for the log to be
// rewritten several times; p999 and max are what a rewrite costs the
// writes beside it.
func BenchmarkJournalTurnsDuringRewrites(b *testing.B) {
	dir := dayOfDoneIDs(b, 100_000)
	m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	j := m.Journal()
	payload, _ := json.Marshal(strings.Repeat("p", 1000))
	ctx := context.Background()
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			id := fmt.Sprint("bench:", n.Add(1))
			start := time.Now()
			if _, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:-100", Payload: payload}); err != nil {
				b.Error(err)
				return
			}
			if err := j.Done(id); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p999-µs")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	}
}
