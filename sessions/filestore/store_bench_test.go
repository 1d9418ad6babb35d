package filestore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// seedEntries are n entries of agent main like those of a long-running
// daemon, by key (startKey(0) to startKey(n-1)).
func seedEntries(n int) map[string]sessions.Entry {
	now := time.Now().UTC()
	m := make(map[string]sessions.Entry, n)
	for i := range n {
		k := startKey(i)
		m[k.String()] = sessions.Entry{SessionKey: k.String(), SessionID: uuid.NewString(), CreatedAt: now, SessionStartedAt: now,
			LastInteractionAt: now, UpdatedAt: now.Add(-time.Duration(i) * time.Second), Title: "a chat about something",
			Channel: "telegram", ChatType: "direct", LastChannel: "telegram", LastTo: fmt.Sprint(100000 + i),
			LastFrom: fmt.Sprint(100000 + i), DisplayName: "Someone", Model: "gpt-4.1", Provider: "openai",
			InputTokens: 12345, OutputTokens: 2345, TotalTokens: 14690, ContextTokens: 9000, MessageCount: 42}
	}
	return m
}

// seedIndex writes an index of n sessions for agent main directly (as the
// store writes it; no transcripts), the way a long-running daemon would
// have left it.
func seedIndex(tb testing.TB, dir string, n int) []routing.Key {
	tb.Helper()
	sdir := filepath.Join(dir, "agents", "main", "sessions")
	if err := mkdirPrivate(sdir); err != nil {
		tb.Fatal(err)
	}
	if err := writeFileAtomic(filepath.Join(sdir, indexName), indexOf(tb, seedEntries(n))); err != nil {
		tb.Fatal(err)
	}
	keys := make([]routing.Key, n)
	for i := range keys {
		keys[i] = startKey(i)
	}
	return keys
}

func benchManager(b *testing.B, n int) (*Manager, *Store, []routing.Key) {
	b.Helper()
	dir := b.TempDir()
	keys := seedIndex(b, dir, n)
	// The cap is above the seeded count: maintenance at Open must not
	// archive the index under the benchmark.
	m, err := Open(Options{StateDir: dir, CacheTTL: -1, Maintenance: sessions.Maintenance{MaxEntries: 10 * n}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	s, err := m.Store("main")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.List(); err != nil { // load the index once
		b.Fatal(err)
	}
	return m, s, keys
}

// BenchmarkStoreBegin: the per-message Begin of an existing session with
// 10,000 sessions in the index (a routine update: no file write).
func BenchmarkStoreBegin(b *testing.B) {
	_, s, keys := benchManager(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := keys[int(i.Add(1))%len(keys)]
			if _, _, err := s.Begin(ctx, k, sessions.Origin{Channel: "telegram", To: "1"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStoreBeginCreate: creating sessions durably (index written before
// return) with 10,000 sessions in the index; concurrent creators share writes.
func BenchmarkStoreBeginCreate(b *testing.B) {
	_, s, _ := benchManager(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k, _ := routing.PeerKey("main", "web", "", routing.Direct, fmt.Sprint("new", i.Add(1)))
			if _, _, err := s.Begin(ctx, k, sessions.Origin{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStoreAppend: one inbound message end to end on the store side —
// Begin, append the user message durably (fsync grouped across concurrent
// sessions), count it — with 10,000 sessions in the index.
func BenchmarkStoreAppend(b *testing.B) {
	_, s, keys := benchManager(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32) // 64 chats writing at once on 2 CPUs
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := keys[int(i.Add(1))%256] // 256 active chats
			e, _, err := s.Begin(ctx, k, sessions.Origin{Channel: "telegram"})
			if err != nil {
				b.Fatal(err)
			}
			t, err := s.Transcript(e.SessionID)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := t.Append(ctx, sessions.UserText("hello there, how are you doing today?", time.Now())); err != nil {
				b.Fatal(err)
			}
			s.AddCounters(k, sessions.Counters{Messages: 1, InputTokens: 10})
		}
	})
}

// BenchmarkStoreList lists 1,000 sessions.
func BenchmarkStoreList(b *testing.B) {
	_, s, _ := benchManager(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, err := s.List()
		if err != nil || len(l) != 1000 {
			b.Fatal(len(l), err)
		}
	}
}

// BenchmarkStoreAddCounters shows a counter update never rewrites
// sessions.json synchronously: index_writes/op stays 0.
func BenchmarkStoreAddCounters(b *testing.B) {
	_, s, keys := benchManager(b, 10000)
	fi0, _ := os.Stat(s.indexPath)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.AddCounters(keys[i%len(keys)], sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Messages: 1})
	}
	b.StopTimer()
	fi1, _ := os.Stat(s.indexPath)
	writes := 0.0
	if !os.SameFile(fi0, fi1) {
		writes = 1 // the 1 s flusher may have run once during a long run
	}
	b.ReportMetric(writes/float64(b.N), "index_writes/op")
}

// BenchmarkStoreFlush: one coalesced flush of a 10,000-session index with
// 100 dirty sessions (what the flusher does at most once a second).
func BenchmarkStoreFlush(b *testing.B) {
	_, s, keys := benchManager(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for j := range 100 {
			s.AddCounters(keys[j], sessions.Counters{Messages: 1})
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournalAccept: durable Accept from 16 concurrent callers.
func BenchmarkJournalAccept(b *testing.B) {
	m, err := Open(Options{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	j := m.Journal()
	ctx := context.Background()
	payload := json.RawMessage(`{"text":"hello there, how are you doing today?","chat":"123456789"}`)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("telegram:default:1:", i.Add(1))
			if _, err := j.Accept(ctx, sessions.Record{ID: id, Payload: payload}); err != nil {
				b.Fatal(err)
			}
			if err := j.Done(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStoreCreateByIndexSize: one durable session creation at a time
// as the index grows, to show how its cost depends on the index size (the
// whole sessions.json is rewritten per creation today: issue 10 item 11).
func BenchmarkStoreCreateByIndexSize(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, s, _ := benchManager(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				k, _ := routing.PeerKey("main", "web", "", routing.Direct, fmt.Sprint("new", i))
				if _, _, err := s.Begin(ctx, k, sessions.Origin{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreUpdateByIndexSize: a counter update made durable at once
// (AddCounters then Flush, which appends the changed entry to the change
// log) as the index grows: its cost must not depend on the index size.
// The daemon flushes at most once a second, so this is the worst case.
func BenchmarkStoreUpdateByIndexSize(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, s, keys := benchManager(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				s.AddCounters(keys[i%len(keys)], sessions.Counters{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Messages: 1})
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreAt100k: listing (sorted, most recent first) and loading
// an index of 100,000 sessions (start-up reads it once).
func BenchmarkStoreAt100k(b *testing.B) {
	b.Run("List", func(b *testing.B) {
		_, s, _ := benchManager(b, 100000)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			es, err := s.List()
			if err != nil || len(es) < 50 {
				b.Fatal(err)
			}
		}
	})
	b.Run("Recent50", func(b *testing.B) {
		_, s, _ := benchManager(b, 100000)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if es, err := s.Recent(50); err != nil || len(es) != 50 {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load", func(b *testing.B) {
		dir := b.TempDir()
		seedIndex(b, dir, 100000)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			m, err := Open(Options{StateDir: dir, CacheTTL: -1, Passive: true})
			if err != nil {
				b.Fatal(err)
			}
			s, err := m.Store("main")
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.Get(routing.Key{}); err == nil {
				b.Fatal("zero key accepted")
			}
			if _, err := s.Recent(50); err != nil {
				b.Fatal(err)
			}
			_ = m.Close()
		}
	})
}
