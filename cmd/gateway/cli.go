package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Exit codes of the operator commands (documented in `gateway --help`):
// 0 success, 1 failure or problems found (doctor without --fix), 2 usage.
const exitCodesHelp = `Exit codes: 0 success; 1 failure, or problems found (doctor); 2 usage error.`

// errProblems makes a command exit 1 after it printed its findings.
var errProblems = errors.New("problems found")

// addOperatorCommands registers the operator subcommands (SPEC §8).
func addOperatorCommands(root *cobra.Command, cfgPath *string) {
	root.Long = root.Short + "\n\n" + exitCodesHelp
	root.AddCommand(
		sessionsCmd(cfgPath),
		configCmd(cfgPath),
		pairingCmd(cfgPath),
		routeCmd(cfgPath),
		doctorCmd(cfgPath),
		healthcheckCmd(cfgPath),
		storageCmd(cfgPath),
	)
}

// usage wraps a command-line mistake so main exits 2.
func usage(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exactArgs is cobra.ExactArgs with exit code 2 and the names of the
// expected arguments in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usage("%s: want %d argument(s) (%s), got %d", cmd.CommandPath(), len(names),
				strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// noArgs is cobra.NoArgs with exit code 2.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage("%s: unexpected argument %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// group returns a parent command that only holds subcommands; calling it
// bare or with an unknown subcommand is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage("%s: unknown subcommand %q", cmd.CommandPath(), args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = cmd.Help()
			return usage("%s: a subcommand is required", cmd.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
}

// loadConfig loads the config file (defaults and env when empty).
func loadConfig(cfgPath string) (*configs.Config, error) {
	return configs.Load(cfgPath)
}

// openSessions opens the state directory for an operator command. The store
// is multi-process safe, so this works while the daemon runs.
func openSessions(cfg *configs.Config) (*sessions.Manager, error) {
	if _, err := os.Stat(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", cfg.StateDir, err)
	}
	return sessions.Open(sessions.Options{
		StateDir:    cfg.StateDir,
		CacheTTL:    0,
		LockTimeout: cfg.Session.LockTimeout,
		Maintenance: cfg.Session.Maintenance,
		Reset:       cfg.Session.ResetConfig(),
		Logger:      zap.NewNop(),
		// The CLI reads beside a running daemon; its writes go through the
		// daemon's API when it runs, or are explicit (doctor --fix, --no-daemon).
		Passive: true,
	})
}

// agentIDs lists the configured agents plus any agent directory found in
// the state directory (sessions of an agent removed from the config stay
// visible).
func agentIDs(cfg *configs.Config) []string {
	var ids []string
	for _, a := range cfg.Agents.List {
		ids = append(ids, strings.ToLower(a.ID))
	}
	ents, _ := os.ReadDir(filepath.Join(cfg.StateDir, "agents"))
	for _, e := range ents {
		if e.IsDir() && routing.ValidID(e.Name()) && !slices.Contains(ids, e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
