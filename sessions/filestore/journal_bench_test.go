package filestore_test

import (
	"testing"

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
