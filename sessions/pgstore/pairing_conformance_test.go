package pgstore

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// sharedDBs remembers the database of each handle a conformance opener
// returned, so that a case asking for a second handle on it gets a second
// pool on the same database, as another replica would open it.
type sharedDBs[K comparable] struct {
	mu   sync.Mutex
	urls map[K]string
}

// open opens a pool on a new database (isNew) or on share's; the function
// it returns records the new handle's database.
func (s *sharedDBs[K]) open(t *testing.T, share K, isNew bool) (*DB, func(K)) {
	t.Helper()
	var url string
	if isNew {
		url = pgtest.NewDatabase(t)
	} else {
		s.mu.Lock()
		url = s.urls[share]
		s.mu.Unlock()
	}
	db, err := Open(context.Background(), Options{URL: url, MaxConns: 10, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatalf("pgstore.Open: %v", err)
	}
	t.Cleanup(db.Close)
	return db, func(k K) {
		s.mu.Lock()
		s.urls[k] = url
		s.mu.Unlock()
	}
}

// TestPairingConformance runs the pairing suite against PostgreSQL, each
// case on a database of its own.
func TestPairingConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.PairingState]{urls: map[sessions.PairingState]string{}}
	sessionstest.TestPairing(t, func(t *testing.T, share sessions.PairingState) sessions.PairingState {
		db, remember := dbs.open(t, share, share == nil)
		ps := db.Pairing() // keyed by its *DB: each handle is a distinct key
		remember(ps)
		return ps
	})
}

// TestCursorsConformance runs the cursor suite against PostgreSQL.
func TestCursorsConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.Cursors]{urls: map[sessions.Cursors]string{}}
	sessionstest.TestCursors(t, func(t *testing.T, share sessions.Cursors) sessions.Cursors {
		db, remember := dbs.open(t, share, share == nil)
		c := db.Cursors()
		remember(c)
		return c
	})
}

// BenchmarkPairing is sessionstest.BenchPairing on PostgreSQL (the files
// figures: BenchmarkPairing in package sessions).
func BenchmarkPairing(b *testing.B) {
	sessionstest.BenchPairing(b, openBench(b, 4).Pairing())
}

// TestLimitsConformance runs the budget counter suite against PostgreSQL.
func TestLimitsConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.LimitCounters]{urls: map[sessions.LimitCounters]string{}}
	sessionstest.TestLimits(t, func(t *testing.T, share sessions.LimitCounters) sessions.LimitCounters {
		db, remember := dbs.open(t, share, share == nil)
		l := db.Limits() // keyed by its *DB: each handle is a distinct key
		remember(l)
		return l
	})
}

// BenchmarkLimits is sessionstest.BenchLimits on PostgreSQL.
func BenchmarkLimits(b *testing.B) {
	sessionstest.BenchLimits(b, openBench(b, 4).Limits())
}

// TestDeadLettersConformance runs the dead letter suite against
// PostgreSQL.
func TestDeadLettersConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.DeadLetters]{urls: map[sessions.DeadLetters]string{}}
	sessionstest.TestDeadLetters(t, func(t *testing.T, share sessions.DeadLetters) sessions.DeadLetters {
		db, remember := dbs.open(t, share, share == nil)
		d := db.DeadLetters()
		remember(d)
		return d
	})
}
