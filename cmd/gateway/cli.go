package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

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
		statusCmd(cfgPath),
		deliveriesCmd(cfgPath),
		jobsCmd(cfgPath),
		storageCmd(cfgPath),
		logsCmd(cfgPath),
		backupCmd(cfgPath),
		importCmd(cfgPath),
		exportCmd(cfgPath),
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

// agentIDs lists the configured agents plus any agent with stored sessions
// (sessions of an agent removed from the config stay visible).
func agentIDs(cfg *configs.Config, b sessions.Backend) ([]string, error) {
	var ids []string
	for _, a := range cfg.Agents.List {
		ids = append(ids, strings.ToLower(a.ID))
	}
	stored, err := b.Agents()
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	for _, id := range stored {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// knownAgent normalises what names an agent (an --agent flag, a session
// key's or a memory scope's agent, told by what) and checks that the config
// lists it or the storage holds sessions of it: a typo'd id is a usage
// error naming the known agents, not an empty answer with exit 0 (nor, on
// the files backend, an empty store directory left behind by opening it).
func knownAgent(env *cliEnv, what, agent string) (string, error) {
	id, err := routing.NormalizeID(agent)
	if err != nil {
		return "", usage("%s %q: %v", what, agent, err)
	}
	ids, err := agentIDs(env.cfg, env.state)
	if err != nil {
		return "", err
	}
	if !slices.Contains(ids, id) {
		return "", usage("%s %q: no such agent (agents: %s)", what, agent, strings.Join(ids, ", "))
	}
	return id, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
