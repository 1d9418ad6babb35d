package pgstore_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// startBenchEnv sets the session counts of BenchmarkStartFirstUse
// (comma-separated, default 1000); startBenchURLEnv names a database kept
// between runs (it is built once per count: a count's sessions are found
// by their keys), instead of a fresh one per run.
const (
	startBenchEnv    = "SESSIONS_START_BENCH_N"
	startBenchURLEnv = "SESSIONS_START_BENCH_URL"
)

func startKey(n, i int) routing.Key {
	k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, strconv.Itoa(n)+"-"+strconv.Itoa(100000+i))
	return k
}

// buildStart leaves n sessions in the database through the real write
// path (Begin, a user and an assistant message, the counters).
func buildStart(b *testing.B, url string, n int) {
	b.Helper()
	ctx := context.Background()
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url, MaxConns: 16, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := db.Store("main", nil)
	if _, ok, err := st.Get(startKey(n, n-1)); err != nil || ok {
		if err != nil {
			b.Fatal(err)
		}
		return // built by an earlier run
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				key := startKey(n, i)
				e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", ChatType: "direct", To: strconv.Itoa(100000 + i)})
				if err == nil {
					var tr sessions.TranscriptLog
					if tr, err = st.TranscriptOf(e); err == nil {
						now := time.Now()
						_, err = tr.Append(ctx, sessions.UserText("hello", now), sessions.Message{Role: sessions.RoleAssistant,
							Content: []sessions.Content{{Type: sessions.BlockText, Text: "hi there"}}, Timestamp: now.UnixMilli()})
					}
				}
				if err != nil {
					errs <- err
					return
				}
				st.AddCounters(key, sessions.Counters{Messages: 2})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkStartFirstUse measures what a daemon's start costs the
// PostgreSQL backend with n sessions stored: opening the pool (migrations
// checked) and the first use of a session (Get, Begin and the context of
// its transcript). Nothing read at open grows with the sessions; the
// files and SQLite backends have the same benchmark.
func BenchmarkStartFirstUse(b *testing.B) {
	sizes := []int{1000}
	if s := os.Getenv(startBenchEnv); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("%s: %q is not a count", startBenchEnv, f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			url := os.Getenv(startBenchURLEnv)
			if url == "" {
				url = pgtest.NewDatabase(b)
			}
			t0 := time.Now()
			buildStart(b, url, n)
			b.Logf("%d sessions ready in %s", n, time.Since(t0).Round(time.Millisecond))
			ctx := context.Background()
			key := startKey(n, n/2)
			for b.Loop() {
				db, err := pgstore.Open(ctx, pgstore.Options{URL: url, Logger: zap.NewNop()})
				if err != nil {
					b.Fatal(err)
				}
				st := db.Store("main", nil)
				if _, ok, err := st.Get(key); err != nil || !ok {
					b.Fatalf("Get(%s) = %v, %v", key, ok, err)
				}
				e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram"})
				if err != nil {
					b.Fatal(err)
				}
				tr, err := st.TranscriptOf(e)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tr.Context(ctx); err != nil {
					b.Fatal(err)
				}
				db.Close()
			}
		})
	}
}
