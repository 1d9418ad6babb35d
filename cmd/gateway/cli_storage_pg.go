package main

import (
	"context"
	"errors"
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

// lazyBackend is a seam backend opened on first use and closed by close.
type lazyBackend struct {
	open func() (sessions.Backend, error)

	once sync.Once
	b    sessions.Backend
	err  error
}

func (l *lazyBackend) get() (sessions.Backend, error) {
	l.once.Do(func() { l.b, l.err = l.open() })
	return l.b, l.err
}

// close closes the backend if it was opened; a later get fails.
func (l *lazyBackend) close() {
	l.once.Do(func() { l.err = errors.New("backend closed") })
	if l.b != nil {
		_ = l.b.Close()
		l.b, l.err = nil, errors.New("backend closed")
	}
}

// postgresBackend opens the postgres backend of url as the CLI opens it
// for `sessions show` (gatewayd.OpenBackend, passive), so the
// verification renders exactly what that command prints.
func postgresBackend(ctx context.Context, cfg *configs.Config, url string) *lazyBackend {
	return &lazyBackend{open: func() (sessions.Backend, error) {
		c := *cfg
		c.Storage.Backend = configs.StoragePostgres
		c.Storage.Postgres.URL, c.Storage.Postgres.URLFile = url, ""
		b, err := gatewayd.OpenBackend(ctx, &c, gatewayd.BackendOptions{Logger: zap.NewNop(), Passive: true})
		if err != nil {
			return nil, fmt.Errorf("open the postgres backend: %w", err)
		}
		return b, nil
	}}
}

// filesBackend opens another handle on the state dir (Passive).
func filesBackend(cfg *configs.Config, dir string) *lazyBackend {
	return &lazyBackend{open: func() (sessions.Backend, error) {
		mgr, err := sessions.Open(sessions.Options{StateDir: dir, CacheTTL: 0, LockTimeout: cfg.Session.LockTimeout,
			Logger: zap.NewNop(), Passive: true})
		if err != nil {
			return nil, err
		}
		return mgr.Backend(), nil
	}}
}
