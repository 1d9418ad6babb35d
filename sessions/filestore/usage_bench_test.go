package filestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// BenchmarkUsageRecord is one turn's ledger row on the files backend (one
// write(2), no fsync).
func BenchmarkUsageRecord(b *testing.B) {
	sessionstest.BenchUsageRecord(b, usageBenchLedger(b))
}

// BenchmarkUsageQuery reports over 100,000 rows (four months) on the files
// backend.
func BenchmarkUsageQuery(b *testing.B) {
	sessionstest.BenchUsageQuery(b, usageBenchLedger(b), 100_000)
}

func usageBenchLedger(b *testing.B) *filestore.UsageLog {
	u := filestore.NewUsageLog(b.TempDir(), nil)
	b.Cleanup(func() { _ = u.Close() })
	return u
}
