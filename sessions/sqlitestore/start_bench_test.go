package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// startBenchEnv sets the session counts of BenchmarkStartFirstUse
// (comma-separated, default 1000); startBenchDirEnv keeps the databases it
// builds in that directory for the next run.
const (
	startBenchEnv    = "SESSIONS_START_BENCH_N"
	startBenchDirEnv = "SESSIONS_START_BENCH_DIR"
)

func startKey(i int) routing.Key {
	k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, strconv.Itoa(100000+i))
	return k
}

// buildStart leaves n sessions in the database at path through the real
// write path (Begin, a user and an assistant message, the counters).
func buildStart(b *testing.B, path string, n int) {
	b.Helper()
	db, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := db.Store("main", nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				key := startKey(i)
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
// backend with n sessions stored: opening the database (migrations
// checked, writer started) and the first use of a session (Get, Begin
// and the context of its transcript). SQLite reads nothing at open that
// grows with the sessions.
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
			dir := os.Getenv(startBenchDirEnv)
			if dir == "" {
				dir = b.TempDir()
			}
			path := filepath.Join(dir, "start-"+strconv.Itoa(n)+".sqlite")
			if _, err := os.Stat(path); err != nil {
				t0 := time.Now()
				buildStart(b, path, n)
				b.Logf("built %d sessions in %s", n, time.Since(t0).Round(time.Millisecond))
			}
			ctx := context.Background()
			key := startKey(n / 2)
			for b.Loop() {
				db, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path, Logger: zap.NewNop()})
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
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
