package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// openBenchDB opens a database of its own, without test logging.
func openBenchDB(b *testing.B) *sqlitestore.DB {
	b.Helper()
	db, err := sqlitestore.Open(context.Background(), sqlitestore.Options{
		Path: filepath.Join(b.TempDir(), sqlitestore.FileName), Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// BenchmarkSeamTranscripts is the seam's transcript benchmark
// (sessionstest.BenchmarkTranscripts) on SQLite, beside the files and
// PostgreSQL backends' (same names in their packages).
func BenchmarkSeamTranscripts(b *testing.B) {
	sessionstest.BenchmarkTranscripts(b, func(b *testing.B) sessionstest.BenchStore {
		st := openBenchDB(b).Store("main", nil)
		return sessionstest.BenchStore{Store: st, Cold: func(e sessions.Entry) (sessions.TranscriptLog, func(), error) {
			tr, err := st.TranscriptOf(e)
			return tr, func() {}, err
		}}
	})
}

// BenchmarkDeliveryAcceptDone: Accept (durable) + Done.
func BenchmarkDeliveryAcceptDone(b *testing.B) {
	sessionstest.BenchAcceptDone(b, openBenchDB(b).Delivery())
}

// BenchmarkDeliveryReadySent: Ready + Sent of two chunks.
func BenchmarkDeliveryReadySent(b *testing.B) {
	sessionstest.BenchReadySent(b, openBenchDB(b).Delivery())
}

// BenchmarkDeliveryAcceptParallel: accepts from many goroutines at once,
// sharing the writer's group commits.
func BenchmarkDeliveryAcceptParallel(b *testing.B) {
	sessionstest.BenchAcceptParallel(b, openBenchDB(b).Delivery())
}
