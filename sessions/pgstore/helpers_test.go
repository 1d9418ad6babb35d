package pgstore

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// openTest opens a migrated store on a fresh database of its own.
func openTest(t testing.TB) (*DB, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	db, err := Open(context.Background(), Options{URL: url, MaxConns: 20, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, url
}

// fakeClock is a settable clock for reset tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func mustKey(t testing.TB, agent, channel, peer string) routing.Key {
	t.Helper()
	k, err := routing.PeerKey(agent, channel, "", routing.Group, peer)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// idle resets a group session after 10 minutes without input.
func idle() sessions.ResetConfig {
	n := 10
	return sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &n}}
}

// TestMain runs a child role of the multi-process tests when asked
// (twoproc_test.go), else the tests, failing the package if one leaves a
// goroutine behind (a pool not closed, an Appender not stopped).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m)
}
