package gatewayd

import (
	"context"
	"fmt"
	"os"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

// openSQLite opens the sqlite backend: the database file
// stateDir/gateway.sqlite (created and migrated at a daemon's start). A
// second daemon on it is refused by the state dir's lock, which the
// daemon takes before it opens the backend (run.go), as for files. The
// CLI (Passive) opens an existing file beside the daemon: SQLite's WAL
// lets it read while the daemon writes, and its writes wait for the
// daemon's (busy timeout).
func openSQLite(ctx context.Context, cfg *configs.Config, o BackendOptions) (sessions.Backend, error) {
	path := sqlitestore.PathIn(cfg.StateDir)
	if o.Passive {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("storage sqlite: database %s: %w", path, err)
		}
	}
	b, err := sqlitestore.OpenBackend(ctx, sqlitestore.BackendOptions{
		Options:     sqlitestore.Options{Path: path, Logger: o.Logger, Now: o.Now, BusyTimeout: cfg.Session.LockTimeout},
		Reset:       cfg.Session.ResetConfig(),
		Maintenance: cfg.Session.Maintenance,
		Passive:     o.Passive,
	})
	if err != nil {
		return nil, fmt.Errorf("storage sqlite: %w", err)
	}
	return b, nil
}
