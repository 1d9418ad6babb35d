package lanes

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkDispatch10kKeys measures the scheduler's cost per run: b.N items
// spread over 10,000 keys that are all queued at once (the 4 main slots are
// held while the items are enqueued), then drained by a no-op runner.
// ns/op is enqueue + batch formation + slot hand-over + goroutine per run.
func BenchmarkDispatch10kKeys(b *testing.B) {
	const nkeys = 10_000
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "agent:main:telegram:group:" + strconv.Itoa(i)
	}
	var done sync.WaitGroup
	hold := make(chan struct{})
	q := New(Options[string]{
		Settings: fixed(Settings{Mode: Followup, Cap: 1 << 30}),
		Run: func(ctx context.Context, bt Batch[string]) {
			if bt.Items[0].ID == "hold" {
				<-hold
				return
			}
			done.Done()
		},
	})
	for i := range DefaultMainCap {
		if err := q.Enqueue("hold"+strconv.Itoa(i), ClassMain, Item{ID: "hold"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	done.Add(b.N)
	for i := range b.N {
		if err := q.Enqueue(keys[i%nkeys], ClassMain, Item{ID: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	close(hold)
	done.Wait()
	b.StopTimer()
	q.Shutdown(context.Background())
}

// BenchmarkDispatchIdleKeys is the common case: each item lands on an idle
// key (one of 10,000) and runs at once.
func BenchmarkDispatchIdleKeys(b *testing.B) {
	const nkeys = 10_000
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "agent:main:telegram:group:" + strconv.Itoa(i)
	}
	var done sync.WaitGroup
	q := New(Options[string]{
		// A cap no run can reach: a dropped item would never count down.
		Settings: fixed(Settings{Debounce: -1, Cap: 1 << 30}),
		Run:      func(ctx context.Context, bt Batch[string]) { done.Add(-len(bt.Items)) },
	})
	b.ReportAllocs()
	b.ResetTimer()
	done.Add(b.N)
	for i := range b.N {
		if err := q.Enqueue(keys[i%nkeys], ClassMain, Item{ID: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	done.Wait()
	b.StopTimer()
	q.Shutdown(context.Background())
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerKey reports the heap held per key (runtime.MemStats)
// with 10,000 keys queued, then after they all ran and went idle.
func BenchmarkMemoryPerKey(b *testing.B) {
	const nkeys = 10_000
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = "agent:main:telegram:group:" + strconv.Itoa(i)
	}
	var queued, idle float64
	for range b.N {
		var done sync.WaitGroup
		hold := make(chan struct{})
		q := New(Options[string]{Run: func(ctx context.Context, bt Batch[string]) {
			if bt.Items[0].ID == "hold" {
				<-hold
				return
			}
			done.Done()
		}})
		for i := range DefaultMainCap {
			if err := q.Enqueue("hold"+strconv.Itoa(i), ClassMain, Item{ID: "hold"}); err != nil {
				b.Fatal(err)
			}
		}
		before := heapAlloc()
		done.Add(nkeys)
		for _, k := range keys {
			if err := q.Enqueue(k, ClassMain, Item{ID: "x"}); err != nil {
				b.Fatal(err)
			}
		}
		queued += float64(heapAlloc()-before) / nkeys
		close(hold)
		done.Wait()
		q.mu.Lock()
		for len(q.keys) != 0 || q.active[ClassMain] != 0 { // runs finishing
			q.mu.Unlock()
			runtime.Gosched()
			q.mu.Lock()
		}
		q.mu.Unlock()
		after := heapAlloc()
		// Idle keys: whatever the queue still holds beyond its state before
		// the 10,000 keys arrived (the map keeps its grown buckets).
		idle += float64(int64(after)-int64(before)) / nkeys
		runtime.KeepAlive(q)
		q.Shutdown(context.Background())
	}
	b.ReportMetric(queued/float64(b.N), "B/queued_key")
	b.ReportMetric(idle/float64(b.N), "B/idle_key")
}
