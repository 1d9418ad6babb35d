package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// memoryCmd is `gateway memory`: the agents' notes that survive /new
// (issue 24), listed, shown, edited and forgotten by the operator. A scope
// is spelled as `gateway memory list` prints it: main/agent,
// main/sender/telegram:42, main/room/discord:900.
func memoryCmd(cfgPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "List, show, edit and forget the agents' notes (memory that survives /new)",
		Long: "The agents' notes, per agent, sender and room. A SCOPE is written as `list` prints it:\n" +
			"AGENT/agent, AGENT/sender/CHANNEL:SENDER_ID or AGENT/room/CHANNEL:CHAT_ID.",
	}
	cmd.AddCommand(memoryListCmd(cfgPath), memoryShowCmd(cfgPath), memoryEditCmd(cfgPath), memoryForgetCmd(cfgPath))
	return cmd
}

func memoryListCmd(cfgPath *string) *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "The scopes holding notes, with their counts and sizes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agent = strings.ToLower(agent)
			if agent != "" && !routing.ValidID(agent) {
				return usage("--agent %q: not a valid agent id", agent)
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				l, err := env.state.Memory().MemoryScopes(env.ctx, agent)
				if err != nil {
					return fmt.Errorf("memory list: %w", err)
				}
				if agent != "" && len(l) == 0 {
					if _, err := knownAgent(env, "--agent", agent); err != nil {
						return err
					}
				}
				if asJSON {
					return printJSON(env.out, l)
				}
				printMemoryScopes(env.out, l)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's scopes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printMemoryScopes(w io.Writer, l []sessions.MemoryScopeInfo) {
	if len(l) == 0 {
		fmt.Fprintln(w, "no notes")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tNOTES\tBYTES\tUPDATED")
	for _, i := range l {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", i.Scope, i.Notes, i.Bytes, i.UpdatedAt.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}

func memoryShowCmd(cfgPath *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show SCOPE",
		Short: "The notes of one scope",
		Args:  exactArgs("SCOPE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := sessions.ParseMemoryScope(args[0])
			if err != nil {
				return usage("%w", err)
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				notes, err := env.state.Memory().Notes(env.ctx, scope)
				if err != nil {
					return fmt.Errorf("memory show: %w", err)
				}
				if len(notes) == 0 {
					if err := memoryAgent(env, scope); err != nil {
						return err
					}
				}
				if asJSON {
					return printJSON(env.out, notes)
				}
				if len(notes) == 0 {
					fmt.Fprintf(env.out, "no notes in %s\n", scope)
					return nil
				}
				tw := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tUPDATED\tTEXT")
				for _, n := range notes {
					fmt.Fprintf(tw, "%d\t%s\t%s\n", n.ID, n.UpdatedAt.UTC().Format(time.RFC3339), strings.Join(strings.Fields(n.Text), " "))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func memoryEditCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "edit SCOPE ID|new TEXT",
		Short: "Replace a note's text, or add a note (ID new), within the agent's configured limits",
		Args:  exactArgs("SCOPE", "ID|new", "TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := sessions.ParseMemoryScope(args[0])
			if err != nil {
				return usage("%w", err)
			}
			var id int64
			if args[1] != "new" {
				if id, err = strconv.ParseInt(args[1], 10, 64); err != nil || id < 1 {
					return usage("ID %q: want a note number from `gateway memory show` or new", args[1])
				}
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				if err := memoryAgent(env, scope); err != nil {
					return err
				}
				lim := memoryLimits(env.cfg, scope.AgentID)
				var n sessions.MemoryNote
				if id == 0 {
					n, err = env.state.Memory().AddNote(env.ctx, scope, args[2], time.Now(), lim)
				} else {
					n, err = env.state.Memory().UpdateNote(env.ctx, scope, id, args[2], time.Now(), lim)
				}
				if err != nil {
					return fmt.Errorf("memory edit: %w", err)
				}
				fmt.Fprintf(env.out, "%s note %d: %s\n", scope, n.ID, n.Text)
				return nil
			})
		},
	}
}

func memoryForgetCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "forget SCOPE [ID]",
		Short: "Delete one note, or every note of the scope",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usage("want SCOPE [ID], got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := sessions.ParseMemoryScope(args[0])
			if err != nil {
				return usage("%w", err)
			}
			var id int64
			if len(args) == 2 {
				if id, err = strconv.ParseInt(args[1], 10, 64); err != nil || id < 1 {
					return usage("ID %q: want a note number from `gateway memory show`", args[1])
				}
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				if id != 0 {
					if err := env.state.Memory().ForgetNote(env.ctx, scope, id); err != nil {
						if errors.Is(err, sessions.ErrNoNote) {
							return fmt.Errorf("memory forget: %s has no note %d", scope, id)
						}
						return fmt.Errorf("memory forget: %w", err)
					}
					fmt.Fprintf(env.out, "forgot %s note %d\n", scope, id)
					return nil
				}
				n, err := env.state.Memory().ForgetScope(env.ctx, scope)
				if err != nil {
					return fmt.Errorf("memory forget: %w", err)
				}
				if n == 0 {
					if err := memoryAgent(env, scope); err != nil {
						return err
					}
				}
				fmt.Fprintf(env.out, "forgot %d notes of %s\n", n, scope)
				return nil
			})
		},
	}
}

// memoryAgent checks that scope's agent is one: configured, holding
// sessions, or holding notes (an agent since removed from the config).
func memoryAgent(env *cliEnv, scope sessions.MemoryScope) error {
	l, err := env.state.Memory().MemoryScopes(env.ctx, scope.AgentID)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if len(l) > 0 {
		return nil
	}
	_, err = knownAgent(env, "scope "+scope.String()+": agent", scope.AgentID)
	return err
}

// memoryLimits are the configured limits of agentID's memory (the
// defaults for an agent the config does not list).
func memoryLimits(cfg *configs.Config, agentID string) sessions.MemoryLimits {
	for _, a := range cfg.Agents.List {
		if a.ID == agentID {
			return a.Memory.Limits()
		}
	}
	return sessions.MemoryLimits{}.WithDefaults()
}
