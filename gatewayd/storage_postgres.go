package gatewayd

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// openPostgres opens the postgres backend of cfg.Storage.Postgres: the
// database's pool (url, maxConns, statementTimeout), its migrations (under
// an advisory lock), and the seam over it. It is the one place the daemon
// and the CLI reach package pgstore. An unreachable server is an error
// naming it (host or socket, port, database, user; never the password).
func openPostgres(ctx context.Context, cfg *configs.Config, o BackendOptions) (sessions.Backend, error) {
	p := cfg.Storage.Postgres
	b, err := pgstore.OpenBackend(ctx, pgstore.BackendOptions{
		Options: pgstore.Options{
			URL:              p.URL,
			MaxConns:         int32(p.MaxConns),
			StatementTimeout: p.StatementTimeout,
			Logger:           o.Logger.Named("postgres"),
			Now:              o.Now,
		},
		Reset:       cfg.Session.ResetConfig(),
		Maintenance: cfg.Session.Maintenance,
		Passive:     o.Passive,
		ReplicaID:   p.ReplicaID,
		// One daemon per database unless replicas: it holds the exclusive
		// lock below, and its turns need no session leases.
		Solo: !p.Replicas && !o.Passive,
	})
	if err != nil {
		return nil, fmt.Errorf("storage postgres: %w", err)
	}
	if !o.Passive {
		return holdDaemonLock(ctx, b, p.Replicas)
	}
	return b, nil
}
