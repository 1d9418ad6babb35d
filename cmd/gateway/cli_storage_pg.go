package main

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/sessions"
)

// configPostgresURL is the config's storage.postgres URL (urlFile already
// read into it); "" when the config names no server.
func configPostgresURL(cfg *configs.Config) string { return cfg.Storage.Postgres.URL }

// postgresSeam opens, on first use, the postgres backend of url as the CLI
// opens it for `sessions show` (gatewayd.OpenBackend, passive), so the
// verification renders exactly what that command prints. close releases
// it.
func postgresSeam(ctx context.Context, cfg *configs.Config, url string) (store func(agent string) (sessions.AgentStore, error), release func()) {
	var (
		once sync.Once
		b    sessions.Backend
		err  error
	)
	open := func() {
		c := *cfg
		c.Storage.Backend = configs.StoragePostgres
		c.Storage.Postgres.URL, c.Storage.Postgres.URLFile = url, ""
		b, err = gatewayd.OpenBackend(ctx, &c, gatewayd.BackendOptions{Logger: zap.NewNop(), Passive: true})
		if err != nil {
			err = fmt.Errorf("open the postgres backend: %w", err)
		}
	}
	store = func(agent string) (sessions.AgentStore, error) {
		once.Do(open)
		if err != nil {
			return nil, err
		}
		return b.Store(agent)
	}
	release = func() {
		once.Do(func() {})
		if b != nil {
			_ = b.Close()
		}
	}
	return store, release
}
