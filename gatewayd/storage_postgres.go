package gatewayd

import (
	"context"
	"errors"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// openPostgres opens the postgres backend of cfg.Storage.Postgres: the
// database's pool (url, maxConns, statementTimeout), its migrations, and
// the seam over it. It is the one place the daemon and the CLI reach
// package pgstore.
func openPostgres(ctx context.Context, cfg *configs.Config, o BackendOptions) (sessions.Backend, error) {
	return nil, errors.New("storage.backend postgres: the PostgreSQL backend is assembled in gatewayd/storage_postgres.go")
}
