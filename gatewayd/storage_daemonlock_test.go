package gatewayd

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
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

// TestSecondDaemonOnOneDatabase: a daemon runs alone on its database unless
// every daemon on it allows replicas: a second one is refused naming the
// holder and saying how to run replicas; replicas share it; a daemon that
// runs alone is refused beside replicas and the other way round.
func TestSecondDaemonOnOneDatabase(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	solo := testConfig(t, "storage: {backend: postgres, postgres: {url: \""+url+"\"}}\n")
	shared := testConfig(t, "storage: {backend: postgres, postgres: {url: \""+url+"\", replicas: true}}\n")
	open := func(cfg *configs.Config) (sessions.Backend, error) {
		return OpenBackend(ctx, cfg, BackendOptions{Logger: zaptest.NewLogger(t)})
	}

	first, err := open(solo)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*configs.Config{solo, shared} {
		_, err := open(cfg)
		if !errors.Is(err, pgstore.ErrOtherDaemon) || !strings.Contains(err.Error(), "backend pid") || !strings.Contains(err.Error(), "replicas: true") {
			t.Errorf("second daemon (replicas %v) beside one running alone: %v", cfg.Storage.Postgres.Replicas, err)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	a, err := open(shared)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(shared)
	if err != nil {
		t.Fatalf("a second replica: %v", err)
	}
	if _, err := open(solo); !errors.Is(err, pgstore.ErrOtherDaemon) {
		t.Errorf("a daemon running alone beside replicas: %v", err)
	}
	for _, x := range []sessions.Backend{a, b} {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// All gone: one alone starts again.
	c, err := open(solo)
	if err != nil {
		t.Fatalf("after the replicas stopped: %v", err)
	}
	_ = c.Close()
}
