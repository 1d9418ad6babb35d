package pgstore

import (
	"context"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestUsageConformance runs the usage ledger suite against PostgreSQL.
func TestUsageConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.UsageLog]{urls: map[sessions.UsageLog]string{}}
	sessionstest.TestUsage(t, func(t *testing.T, share sessions.UsageLog) sessions.UsageLog {
		db, remember := dbs.open(t, share, share == nil)
		u := db.Usage()
		remember(u)
		return u
	})
}

// TestUsageRebuildConformance rebuilds the ledger from PostgreSQL transcripts.
func TestUsageRebuildConformance(t *testing.T) {
	pgtest.AdminURL(t)
	sessionstest.TestUsageRebuild(t, func(t *testing.T) sessions.Backend {
		b, err := OpenBackend(context.Background(), BackendOptions{Options: Options{URL: pgtest.NewDatabase(t),
			Logger: zaptest.NewLogger(t)}, Passive: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}

// BenchmarkUsageRecord is one turn's ledger row on PostgreSQL (one INSERT;
// the files figures: BenchmarkUsageRecord in package sessions).
func BenchmarkUsageRecord(b *testing.B) {
	sessionstest.BenchUsageRecord(b, openBench(b, 4).Usage())
}

// BenchmarkUsageQuery reports over 100,000 rows on PostgreSQL.
func BenchmarkUsageQuery(b *testing.B) {
	db := openBench(b, 4)
	sessionstest.BenchUsageQuery(b, db.Usage(), 100_000)
}
