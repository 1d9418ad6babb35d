package filestore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// buildSessions leaves n sessions of agent main below dir through the real
// write path (Begin, a transcript with a user and an assistant message,
// the counters the turn adds), as a daemon that served them would, and
// closes the Manager. Returns the keys.
func buildSessions(tb testing.TB, dir string, n int) []routing.Key {
	tb.Helper()
	m, err := Open(Options{StateDir: dir, CacheTTL: -1, Maintenance: sessions.Maintenance{MaxEntries: 10 * n}})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := m.Store("main")
	if err != nil {
		tb.Fatal(err)
	}
	keys := make([]routing.Key, n)
	for i := range n {
		keys[i], _ = routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprint(100000+i))
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				e, _, err := s.Begin(ctx, keys[i], sessions.Origin{Channel: "telegram", ChatType: "direct", To: fmt.Sprint(100000 + i)})
				if err == nil {
					var t *transcript.File
					if t, err = s.TranscriptOf(e); err == nil {
						now := time.Now()
						_, err = t.AppendLazy(ctx, sessions.UserText("hello", now), sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "hi there"}}, Timestamp: now.UnixMilli()})
					}
				}
				if err != nil {
					errs <- err
					return
				}
				s.AddCounters(keys[i], sessions.Counters{Messages: 2})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	if err := m.Close(); err != nil {
		tb.Fatal(err)
	}
	return keys
}

// BenchmarkStartFirstUse: the real start path of a store with n sessions
// (built by buildSessions): Open, then the first Get of a session, which a
// first reply waits for.
func BenchmarkStartFirstUse(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			keys := buildSessions(b, dir, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m, err := Open(Options{StateDir: dir, CacheTTL: -1, Maintenance: sessions.Maintenance{MaxEntries: 10 * n}})
				if err != nil {
					b.Fatal(err)
				}
				s, err := m.Store("main")
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := s.Get(keys[n/2]); err != nil || !ok {
					b.Fatal(ok, err)
				}
				b.StopTimer()
				_ = m.Close()
				b.StartTimer()
			}
		})
	}
}
