package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// sessionsMutateCmd is `gateway sessions reset|delete|compact KEY`.
func sessionsMutateCmd(cfgPath *string, op, short string) *cobra.Command {
	var noDaemon bool
	var instructions string
	c := &cobra.Command{
		Use:   op + " KEY",
		Short: short + ". Goes through the running daemon when it answers, else acts on the store directly.",
		Args:  exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				f, err := findSession(env.state, env.cfg, args[0])
				if err != nil {
					return err
				}
				if dc := newDaemonClient(env.cfg); !noDaemon && dc.alive(env.ctx) {
					return mutateViaDaemon(env.ctx, dc, env.out, op, f, instructions)
				}
				return mutateDirect(env.ctx, env.cfg, env.state, env.out, op, f, instructions)
			})
		},
	}
	c.Flags().BoolVar(&noDaemon, "no-daemon", false, "act on the store directly even if the daemon runs")
	if op == "compact" {
		c.Flags().StringVar(&instructions, "instructions", "", "what the summary should focus on")
	}
	return c
}

func mutateViaDaemon(ctx context.Context, dc *daemonClient, out io.Writer, op string, f found, instructions string) error {
	path := "/api/agents/" + url.PathEscape(f.AgentID) + "/sessions/" + url.PathEscape(f.Entry.SessionID)
	var answer struct {
		Session api.SessionView `json:"session"`
	}
	var err error
	switch op {
	case "delete":
		err = dc.do(ctx, "DELETE", path, nil, nil)
	case "reset":
		err = dc.do(ctx, "POST", path+"/reset", nil, &answer)
	case "compact":
		err = dc.do(ctx, "POST", path+"/compact", api.CompactRequest{Instructions: instructions}, &answer)
	}
	if err != nil {
		return fmt.Errorf("sessions %s: %w", op, err)
	}
	reportMutation(out, op, f, answer.Session.SessionID, answer.Session.Compactions, "via the daemon")
	return nil
}

func mutateDirect(ctx context.Context, cfg *configs.Config, state sessions.Backend, out io.Writer, op string, f found, instructions string) error {
	switch op {
	case "delete":
		if err := f.Store.Delete(ctx, f.Key); err != nil {
			return fmt.Errorf("sessions delete: %w", err)
		}
		reportMutation(out, op, f, "", 0, "in the store")
	case "reset":
		e, err := f.Store.Reset(ctx, f.Key, sessions.ResetOptions{Manual: true, Reason: "cli"})
		if err != nil {
			return fmt.Errorf("sessions reset: %w", err)
		}
		reportMutation(out, op, f, e.SessionID, 0, "in the store")
	case "compact":
		runner, err := localRunner(cfg, state)
		if err != nil {
			return fmt.Errorf("sessions compact needs the daemon (not running) or a usable provider here: %w", err)
		}
		if err := runner.Compact(ctx, f.AgentID, f.Key, instructions); err != nil {
			return fmt.Errorf("sessions compact: %w", err)
		}
		e, _, err := f.Store.Get(f.Key)
		if err != nil {
			return err
		}
		reportMutation(out, op, f, e.SessionID, e.CompactionCount, "in this process (the daemon is not running)")
	}
	return nil
}

// localRunner builds an agent runner in this process for a compaction while
// the daemon is down.
func localRunner(cfg *configs.Config, state sessions.Backend) (*agents.Runner, error) {
	providers, err := agents.NewProviders(cfg.Providers, zap.NewNop())
	if err != nil {
		return nil, err
	}
	return agents.NewRunner(agents.Options{Sessions: state, Providers: providers, Defaults: cfg.Agents.Defaults,
		Agents: cfg.Agents.List, Logger: zap.NewNop(), Prices: agents.PricesFrom(cfg.Providers),
		ContextWindows: agents.ContextWindowsFrom(cfg.Providers)})
}

func reportMutation(out io.Writer, op string, f found, newID string, compactions int, how string) {
	switch op {
	case "delete":
		fmt.Fprintf(out, "deleted %s (session %s archived, recoverable) %s\n", f.Key, f.Entry.SessionID, how)
	case "reset":
		fmt.Fprintf(out, "reset %s: new session %s (previous %s archived) %s\n", f.Key, newID, f.Entry.SessionID, how)
	case "compact":
		fmt.Fprintf(out, "compacted %s (session %s, %d compactions) %s\n", f.Key, newID, compactions, how)
	}
}
