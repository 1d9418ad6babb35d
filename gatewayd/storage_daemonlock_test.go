package gatewayd

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestPostgresDaemonLock: a daemon's postgres backend holds the daemon
// lock until Close (a migration cannot take it meanwhile; a passive CLI
// open does not take it), and a daemon does not start while a migration
// holds it.
func TestPostgresDaemonLock(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t, "storage: {backend: postgres, postgres: {url: \""+url+"\"}}\n")
	db, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	cli, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t), Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	release, err := db.LockExclusive(ctx)
	if err != nil {
		t.Fatalf("a passive open holds the daemon lock: %v", err)
	}
	if _, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)}); !errors.Is(err, pgstore.ErrMigrating) {
		t.Fatalf("daemon start during a migration: %v, want ErrMigrating", err)
	}
	release()
	_ = cli.Close()

	b, err := OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.LockExclusive(ctx); !errors.Is(err, pgstore.ErrInUse) {
		t.Fatalf("migration beside a daemon: %v, want ErrInUse", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	release, err = db.LockExclusive(ctx)
	if err != nil {
		t.Fatalf("migration after the daemon closed: %v", err)
	}
	release()
}
