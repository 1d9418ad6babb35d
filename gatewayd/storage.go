package gatewayd

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// BackendOptions are what OpenBackend needs besides the config.
type BackendOptions struct {
	// Logger receives the backend's logs; nil discards them.
	Logger *zap.Logger
	// Now replaces the session clock (reset-policy tests); nil is time.Now.
	Now func() time.Time
	// Passive opens the state for a short-lived tool beside a running
	// daemon (the CLI): reads are never served from a cache, nothing is
	// repaired or maintained in the background, and nothing is created
	// (a missing state dir is an error).
	Passive bool
	// Observe receives the files backend's lock waits and flush times
	// (filestore.Options.Observe); nil: not observed.
	Observe func(what string, d time.Duration)
}

// OpenBackend opens the storage backend cfg.Storage selects (SPEC §3.8):
// the daemon and the CLI both open durable state through it. The caller
// closes the backend.
func OpenBackend(ctx context.Context, cfg *configs.Config, o BackendOptions) (sessions.Backend, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	switch cfg.Storage.Backend {
	case "", configs.StorageFiles:
		return openFiles(cfg, o)
	case configs.StorageSQLite:
		return openSQLite(ctx, cfg, o)
	case configs.StoragePostgres:
		return openPostgres(ctx, cfg, o)
	default:
		return nil, fmt.Errorf("storage.backend: %q is not %s, %s or %s", cfg.Storage.Backend,
			configs.StorageFiles, configs.StorageSQLite, configs.StoragePostgres)
	}
}

// openFiles opens the files backend: everything under cfg.StateDir.
func openFiles(cfg *configs.Config, o BackendOptions) (sessions.Backend, error) {
	cacheTTL := time.Duration(-1) // the default cache: this process writes the index
	if o.Passive {
		if _, err := os.Stat(cfg.StateDir); err != nil {
			return nil, fmt.Errorf("storage files: state directory %s: %w", cfg.StateDir, err)
		}
		// The daemon may write the index at any moment: read it afresh.
		cacheTTL = 0
	}
	mgr, err := filestore.Open(filestore.Options{
		StateDir:    cfg.StateDir,
		CacheTTL:    cacheTTL,
		LockTimeout: cfg.Session.LockTimeout,
		Maintenance: cfg.Session.Maintenance,
		Reset:       cfg.Session.ResetConfig(),
		Logger:      o.Logger,
		Now:         o.Now,
		Passive:     o.Passive,
		Observe:     o.Observe,
	})
	if err != nil {
		return nil, fmt.Errorf("storage files: %w", err)
	}
	return mgr.Backend(), nil
}
