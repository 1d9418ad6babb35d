package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// jobsCmd is `gateway jobs list|add|remove`: the scheduled jobs, in the
// configured storage itself (it is safe beside a running daemon, whose
// scheduler sees a job added here within jobs.poll).
func jobsCmd(cfgPath *string) *cobra.Command {
	return group("jobs", "List, add or remove scheduled jobs (reminders and recurring tasks)",
		jobsListCmd(cfgPath), jobsAddCmd(cfgPath), jobsRemoveCmd(cfgPath))
}

func jobsListCmd(cfgPath *string) *cobra.Command {
	var f sessions.JobFilter
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the active jobs, due first (--all: ended ones too: done, missed, disabled, with why)",
		Example: "  gateway jobs list\n  gateway jobs list --session agent:main:telegram:group:-100 --all\n" +
			"  gateway jobs list --json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The filters match stored ids exactly: spell them as stored,
			// as every other command accepts them (MAIN, AGENT:MAIN:...).
			if f.AgentID != "" {
				a, err := routing.NormalizeID(f.AgentID)
				if err != nil {
					return usage("--agent %q: %v", f.AgentID, err)
				}
				f.AgentID = a
			}
			if f.SessionKey != "" {
				k, err := routing.Parse(f.SessionKey)
				if err != nil {
					return usage("--session: %v (`gateway sessions list` shows the keys)", err)
				}
				f.SessionKey = k.String()
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				f.Active = !all
				js, err := env.state.Jobs().ListJobs(env.ctx, f)
				if err != nil {
					return fmt.Errorf("jobs list: %w", err)
				}
				// A removed agent's jobs stay listed; no jobs for an id
				// that names no agent is a typo.
				if f.AgentID != "" && len(js) == 0 {
					if _, err := knownAgent(env, "--agent", f.AgentID); err != nil {
						return err
					}
				}
				if asJSON {
					return printJSON(env.out, map[string]any{"jobs": js})
				}
				printJobs(env, js)
				return nil
			})
		},
	}
	c.Flags().StringVar(&f.AgentID, "agent", "", "only this agent's jobs")
	c.Flags().StringVar(&f.SessionKey, "session", "", "only the jobs of this session key")
	c.Flags().BoolVar(&all, "all", false, "also the jobs that ended (done, missed, disabled)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printJobs prints jobs as a table, times in the agents' job zones.
func printJobs(env *cliEnv, js []sessions.Job) {
	if len(js) == 0 {
		fmt.Fprintln(env.out, "no jobs")
		return
	}
	tw := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNEXT\tSCHEDULE\tSTATE\tFIRES\tSESSION\tSET BY\tTEXT\tNOTE")
	for _, j := range js {
		sched := "once"
		if j.Schedule.Recurring() {
			sched = j.Schedule.Cron + " " + j.Schedule.TZ
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%q\t%s\n", j.ID,
			j.NextAt.In(env.cfg.Jobs.Zone(j.AgentID)).Format("2006-01-02 15:04 MST"), sched, j.State, j.Fires,
			j.SessionKey, orDash(j.Target.SenderName), clip(j.Text, 40), orDash(clip(j.Note, 60)))
	}
	_ = tw.Flush()
}

func jobsAddCmd(cfgPath *string) *cobra.Command {
	var session string
	c := &cobra.Command{
		Use:   "add --session KEY WHEN TEXT...",
		Short: "Schedule TEXT into a session's chat (the chat it last heard from), as /remind does",
		Long: "Add a job: at WHEN, TEXT arrives in the session as a message and its agent answers it in the chat.\n" +
			"WHEN is one of " + jobs.WhenHelp + ";\ntimes of day are in jobs.timezone (or the agent's jobs.timezoneByAgent).",
		Example: "  gateway jobs add --session agent:main:telegram:group:-100 tomorrow 09:00 Stand-up in 5 minutes\n" +
			"  gateway jobs add --session agent:main:telegram:group:-100 every weekday at 08:30 Post the on-call rota",
		Args: cobra.MinimumNArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if session == "" {
				return usage("%s: --session is required (`gateway sessions list` shows the keys)", cmd.CommandPath())
			}
			if len(args) < 2 {
				return usage("%s: want WHEN and TEXT, e.g. tomorrow 09:00 Stand-up", cmd.CommandPath())
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				if !env.cfg.Jobs.Enabled {
					return usage("jobs add: scheduled jobs are off (jobs.enabled: false)")
				}
				if k, err := routing.Parse(session); err == nil {
					if _, err := knownAgent(env, "jobs add: --session agent", k.Agent); err != nil {
						return err
					}
				}
				j, err := jobs.ForSession(env.ctx, env.state, session, strings.Join(args, " "), env.cfg.Jobs.Zone, time.Now())
				if err != nil {
					return usage("jobs add: %v", err)
				}
				if err := jobs.Add(env.ctx, env.state.Jobs(), j, env.cfg.Jobs.MaxPerRoom); err != nil {
					return fmt.Errorf("jobs add: %w", err)
				}
				fmt.Fprintf(env.out, "added %s: next %s into %s/%s/%s\n", j.ID,
					j.NextAt.In(env.cfg.Jobs.Zone(j.AgentID)).Format("2006-01-02 15:04 MST"), j.Target.Channel, j.Target.AccountID, j.Target.ChatID)
				return nil
			})
		},
	}
	c.Flags().StringVar(&session, "session", "", "the session key the job is delivered into")
	return c
}

func jobsRemoveCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Delete a job (a recurring one stops; an ended one is forgotten)",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				err := env.state.Jobs().RemoveJob(env.ctx, args[0])
				if errors.Is(err, sessions.ErrNoJob) {
					return usage("jobs remove: no job %q (`gateway jobs list --all` shows them)", args[0])
				}
				if err != nil {
					return fmt.Errorf("jobs remove: %w", err)
				}
				fmt.Fprintf(env.out, "removed %s\n", args[0])
				return nil
			})
		},
	}
}
