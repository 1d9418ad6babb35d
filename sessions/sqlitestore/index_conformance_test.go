package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// openAgentStore opens a conformance case's store of agent "main": on a
// database file of its own, or on o.Share's through a second DB.
func openAgentStore(t *testing.T, f *files[sessions.Index], o sessionstest.Options) sessions.AgentStore {
	t.Helper()
	db, path := f.open(t, o.Share, o.Now)
	reset := o.Reset
	st := db.Store("main", func() sessions.ResetConfig { return reset })
	f.keep(st, path)
	return st
}

func TestIndexConformance(t *testing.T) {
	var f files[sessions.Index]
	sessionstest.TestIndex(t, func(t *testing.T, o sessionstest.Options) sessions.Index { return openAgentStore(t, &f, o) })
}

func TestTranscriptConformance(t *testing.T) {
	var f files[sessions.Index]
	sessionstest.TestTranscripts(t, func(t *testing.T, o sessionstest.Options) sessions.AgentStore {
		return openAgentStore(t, &f, o)
	})
}
