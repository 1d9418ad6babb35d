package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/usagereport"
)

// usageCmd is `gateway usage`: tokens and cost from the usage ledger,
// grouped, and `gateway usage rebuild` to fill the ledger from transcripts.
func usageCmd(cfgPath *string) *cobra.Command {
	var (
		agent, by, since string
		asJSON           bool
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Tokens and cost per sender, session, room, model, day or agent (from the usage ledger)",
		Long: "Tokens and cost per sender, session, room, model, day or agent, from the usage ledger (one row per turn).\n" +
			"--since takes a span back from now (7d, 12h, 2w), a UTC day (2026-11-01) or an RFC 3339 time.\n" +
			"Turns from before the ledger existed: run `gateway usage rebuild` once.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := usageFilter(agent, by, since, time.Now())
			if err != nil {
				return err
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				rep, err := usagereport.Query(env.ctx, env.state.Usage(), f)
				if err != nil {
					return fmt.Errorf("usage: %w", err)
				}
				// The ledger keeps the turns of agents since removed; an
				// id with no turns ever that names no agent is a typo.
				if f.AgentID != "" && rep.Total.Turns == 0 {
					if _, err := knownAgent(env, "--agent", agent); err != nil {
						ever, qerr := usagereport.Query(env.ctx, env.state.Usage(), sessions.UsageFilter{AgentID: f.AgentID})
						if qerr != nil {
							return fmt.Errorf("usage: %w", qerr)
						}
						if ever.Total.Turns == 0 {
							return err
						}
					}
				}
				if asJSON {
					return printJSON(env.out, rep)
				}
				printUsage(env.out, rep)
				if rep.Total.Turns == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no turns recorded in this range; for turns from before the usage ledger existed run `gateway usage rebuild`")
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's turns")
	cmd.Flags().StringVar(&by, "by", "", "group by "+strings.Join(sessions.UsageDimensions, "|")+" (default: one total)")
	cmd.Flags().StringVar(&since, "since", "", "from: 7d, 12h, 2w, 2026-11-01 (UTC) or RFC 3339 (default: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(usageRebuildCmd(cfgPath))
	return cmd
}

// usageFilter checks the flags; a mistake is a usage error (exit 2).
func usageFilter(agent, by, since string, now time.Time) (sessions.UsageFilter, error) {
	f := sessions.UsageFilter{AgentID: strings.ToLower(agent), By: by}
	if f.AgentID != "" && !routing.ValidID(f.AgentID) {
		return f, usage("--agent %q: not a valid agent id", agent)
	}
	var err error
	if f.Since, err = usagereport.ParseSince(since, now); err != nil {
		return f, usage("--%w", err)
	}
	if err := sessions.CheckUsageFilter(f); err != nil {
		return f, usage("--%s", strings.TrimPrefix(err.Error(), "usage filter: "))
	}
	return f, nil
}

// printUsage writes rep as a table with a total line.
func printUsage(w io.Writer, rep usagereport.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := strings.ToUpper(rep.By)
	fmt.Fprintf(tw, "%s\tNAME\tTURNS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST USD\n", head)
	line := func(key, name string, b sessions.UsageBucket) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.4f\n", key, name, b.Turns, b.Input, b.Output, b.CacheRead, b.CacheWrite, b.Cost)
	}
	if rep.By != "total" {
		for _, b := range rep.Buckets {
			line(orDash(b.Key), orDash(b.Label), b)
		}
	}
	line("TOTAL", "", rep.Total)
	_ = tw.Flush()
}

// usageRebuildCmd is `gateway usage rebuild`: the turns transcripts hold
// and the ledger lacks are added (idempotent; safe beside a running
// daemon, which records turns of the last minute itself).
func usageRebuildCmd(cfgPath *string) *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Add to the usage ledger the turns the transcripts hold and it lacks (after an upgrade; idempotent)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agent = strings.ToLower(agent)
			if agent != "" && !routing.ValidID(agent) {
				return usage("--agent %q: not a valid agent id", agent)
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				if agent != "" {
					if _, err := knownAgent(env, "--agent", agent); err != nil {
						return err
					}
				}
				prices := agents.PricesFrom(env.cfg.Providers)
				rep, err := usagereport.Rebuild(env.ctx, env.state, usagereport.RebuildOptions{
					AgentID: agent, Before: time.Now().Add(-time.Minute), Price: prices.Total,
				})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env.out, rep)
				}
				fmt.Fprintf(env.out, "read %d transcripts, %d turns with usage; added %d rows (%d priced from the config), skipped %d\n",
					rep.Sessions, rep.Turns, rep.Added, rep.Priced, rep.Skipped)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
