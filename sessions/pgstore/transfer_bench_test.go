package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/transfer"
)

// BenchmarkMigrate copies 1,000 sessions × 50 messages from files to
// PostgreSQL and back (transfer.Copy with the default workers, then
// transfer.Compare as `storage migrate` verifies), each iteration into an
// empty target. ns/op is one whole direction.
func BenchmarkMigrate(b *testing.B) {
	const sessionsN, messages = 1000, 50
	ctx := context.Background()
	src := openFiles(b, b.TempDir())
	sessionstest.BuildBulk(b, src.Backend().Store, sessionsN, messages)
	seeded, _ := openTest(b)
	if _, err := transfer.Copy(ctx, src.Transfer(), seeded.Transfer(), transfer.Options{}); err != nil {
		b.Fatal(err)
	}

	run := func(b *testing.B, from sessions.Exporter, target func() sessions.Importer) {
		var copying, comparing time.Duration
		for b.Loop() {
			b.StopTimer()
			to := target()
			b.StartTimer()
			start := time.Now()
			st, err := transfer.Copy(ctx, from, to, transfer.Options{})
			if err != nil {
				b.Fatal(err)
			}
			copying += time.Since(start)
			start = time.Now()
			c, err := transfer.Compare(ctx, from, to, 0)
			if err != nil || len(c.Differences) > 0 || st.Sessions != sessionsN {
				b.Fatalf("copy %+v, compare %+v, %v", st, c, err)
			}
			comparing += time.Since(start)
		}
		b.ReportMetric(float64(sessionsN)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
		b.ReportMetric(copying.Seconds()/float64(b.N), "copy-s/op")
		b.ReportMetric(comparing.Seconds()/float64(b.N), "compare-s/op")
	}
	b.Run("files_to_postgres", func(b *testing.B) {
		run(b, src.Transfer(), func() sessions.Importer {
			db, _ := openTest(b)
			return db.Transfer()
		})
	})
	b.Run("postgres_to_files", func(b *testing.B) {
		run(b, seeded.Transfer(), func() sessions.Importer { return openFiles(b, b.TempDir()).Transfer() })
	})
}
