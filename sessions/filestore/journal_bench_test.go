package filestore_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkJournalAcceptDoneDayOfIDs: Accept + Done on a journal that
// remembers 500,000 done ids (a day of a bot answering ~6 messages a
// second, sessions.DoneRetention), 36 MB of done lines. Its log is written
// in the journal's own line format, as a rewrite leaves it.
func BenchmarkJournalAcceptDoneDayOfIDs(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ingress"), 0o700); err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var buf bytes.Buffer
	for i := range 500_000 {
		fmt.Fprintf(&buf, `{"op":"done","ids":["telegram:main:-100123456789:%d"],"at":%q}`+"\n", i, at)
	}
	if err := os.WriteFile(filepath.Join(dir, "ingress", "journal.jsonl"), buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	sessionstest.BenchAcceptDone(b, m.Journal())
}
