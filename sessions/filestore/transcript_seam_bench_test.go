package filestore_test

import (
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// BenchmarkSeamTranscripts runs the backend-neutral transcript benchmarks
// on the files backend (pgstore's BenchmarkSeamTranscripts runs them on
// PostgreSQL). A cold load opens a new Manager on the state dir, as a
// restarted daemon does; only the Context call is in the latency figures.
//
//	go test -run '^$' -bench SeamTranscripts ./sessions ./sessions/pgstore
func BenchmarkSeamTranscripts(b *testing.B) {
	sessionstest.BenchmarkTranscripts(b, func(b *testing.B) sessionstest.BenchStore {
		dir := b.TempDir()
		m := openBenchManager(b, dir)
		b.Cleanup(func() { _ = m.Close() })
		st, err := m.Backend().Store("main")
		if err != nil {
			b.Fatal(err)
		}
		return sessionstest.BenchStore{Store: st, Cold: func(e sessions.Entry) (sessions.TranscriptLog, func(), error) {
			m := openBenchManager(b, dir)
			st, err := m.Backend().Store("main")
			if err != nil {
				_ = m.Close()
				return nil, nil, err
			}
			tr, err := st.TranscriptOf(e)
			return tr, func() { _ = m.Close() }, err
		}}
	})
}

func openBenchManager(b *testing.B, dir string) *filestore.Manager {
	b.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	return m
}
