package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// cliEnv is what an operator command works on: its context and output,
// the loaded config and, under withStorage, the configured storage.
type cliEnv struct {
	ctx context.Context
	out io.Writer
	cfg *configs.Config
	// state is the storage opened by withStorage (nil under withConfig).
	state sessions.Backend
}

// withConfig loads the config file (defaults and env when cfgPath is
// empty) and runs fn with it. A command checks its flags and arguments
// before, so a usage error is reported before a config error.
func withConfig(cmd *cobra.Command, cfgPath string, fn func(env *cliEnv) error) error {
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	return fn(&cliEnv{ctx: cmd.Context(), out: cmd.OutOrStdout(), cfg: cfg})
}

// withStorage loads the config, opens its storage passively
// (openSessions: beside a running daemon too) and runs fn; the storage is
// closed when fn returns.
func withStorage(cmd *cobra.Command, cfgPath string, fn func(env *cliEnv) error) error {
	return withConfig(cmd, cfgPath, func(env *cliEnv) error {
		state, err := openSessions(env.ctx, env.cfg)
		if err != nil && cfgPath == "" {
			return fmt.Errorf("%w (no config was given, so the built-in defaults were used, state dir %s: pass -c FILE or set GATEWAY_CONFIG)", err, env.cfg.StateDir)
		}
		if err != nil {
			return err
		}
		defer state.Close()
		env.state = state
		return fn(env)
	})
}

// pairing is the pairing store over env's storage.
func (env *cliEnv) pairing() *access.PairingStore {
	return access.NewPairingStore(env.state.Pairing(), access.StoreOptions{LockTimeout: env.cfg.Session.LockTimeout})
}

// loadConfig loads the config file (defaults and env when empty).
func loadConfig(cfgPath string) (*configs.Config, error) {
	return configs.Load(cfgPath)
}

// openSessions opens the configured storage for an operator command,
// passively: the store is multi-process safe, so this works while the
// daemon runs; its writes go through the daemon's API when it runs, or are
// explicit (doctor --fix, --no-daemon).
func openSessions(ctx context.Context, cfg *configs.Config) (sessions.Backend, error) {
	return gatewayd.OpenBackend(ctx, cfg, gatewayd.BackendOptions{Logger: zap.NewNop(), Passive: true})
}

// openFiles opens the files backend of dir itself, passively (no
// maintenance, no counter repair), for `storage migrate`: the one place
// the CLI names the files backend's package. The caller holds the state
// dir's lock when nothing else may write it.
func openFiles(dir string, lockTimeout time.Duration) (*filestore.Manager, error) {
	return filestore.Open(filestore.Options{StateDir: dir, CacheTTL: 0, LockTimeout: lockTimeout, Logger: zap.NewNop(),
		Passive: true})
}
