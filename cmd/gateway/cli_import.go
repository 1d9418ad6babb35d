package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

func importCmd(cfgPath *string) *cobra.Command {
	return group("import", "Bring another system's state into this gateway", importOpenClawCmd(cfgPath))
}

const importOpenClawLong = `Read an OpenClaw state directory (~/.openclaw) and bring its sessions
into the storage backend the config names (files, sqlite or postgres).

Both of OpenClaw's layouts are read, per agent: the SQLite one (releases
since 2026.7: agents/<id>/agent/openclaw-agent.sqlite, state/openclaw.sqlite)
and the JSON-era one (agents/<id>/sessions/sessions.json and JSONL
transcripts). Each session key comes over with its entry (ids, title,
clocks, token counters, origin and delivery context, model and thinking
overrides, group activation) and its transcript's active branch (messages,
tool calls and results, compactions); the Telegram and Discord pairing
allowlists come over as approvals, and the users' cron jobs as gateway
jobs (a reminder announcing to a Telegram chat or topic of an account the
config serves, or a main-session system event: on that room's session,
with its text and schedule, first due after now). OpenClaw's managed jobs
(heartbeat, memory dreaming), disabled ones and those with no chat to land
in are listed as skipped, with why. The databases are copied to a temporary
directory and read there: the source is never written. Stop OpenClaw first,
so the copy is consistent.

A key the gateway already holds is left as it is: running the import twice
imports nothing new. It refuses while a gateway daemon holds the state (the
state dir's gateway.pid lock, or PostgreSQL's daemon lock). --dry-run reads
both sides, writes nothing and prints the plan. What could not be mapped
is listed at the end, per field with counts (--json for scripts).`

type importFlags struct {
	from   string
	agents []string
	dry    bool
	asJSON bool
}

func importOpenClawCmd(cfgPath *string) *cobra.Command {
	var f importFlags
	c := &cobra.Command{
		Use:   "openclaw --from DIR [--agent ID ...] [--dry-run]",
		Short: "Import an OpenClaw state directory (SQLite or JSON-era layout): sessions, transcripts, pairing allowlists, cron jobs",
		Long:  importOpenClawLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.from == "" {
				return usage("import openclaw: --from DIR is required (OpenClaw's state dir, e.g. ~/.openclaw)")
			}
			for i, a := range f.agents {
				id, err := routing.NormalizeID(a)
				if err != nil {
					return usage("import openclaw: --agent %q: %v", a, err)
				}
				f.agents[i] = id
			}
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				return runImportOpenClaw(env.ctx, env.out, env.cfg, f)
			})
		},
	}
	c.Flags().StringVar(&f.from, "from", "", "OpenClaw's state directory (e.g. ~/.openclaw)")
	c.Flags().StringSliceVar(&f.agents, "agent", nil, "import only this agent (repeatable)")
	c.Flags().BoolVar(&f.dry, "dry-run", false, "write nothing; print what would be imported")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the plan, the result and the unmapped fields as JSON")
	return c
}

// openclawDecoders are the files backend's readers the importer reads
// OpenClaw's entries with (its format is theirs).
var openclawDecoders = openclaw.Decoders{ReadIndex: filestore.ReadIndex, DecodeEntry: filestore.DecodeEntry}

func runImportOpenClaw(ctx context.Context, out io.Writer, cfg *configs.Config, f importFlags) error {
	plan, err := openclaw.Read(f.from, openclaw.Options{Agents: f.agents, Decoders: openclawDecoders})
	if err != nil {
		return err
	}
	to, err := openConfiguredSide(ctx, cfg, "import openclaw")
	if err != nil {
		return err
	}
	defer to.close()
	openclaw.MapJobs(plan, openclaw.JobOptions{Now: time.Now(), Zone: cfg.Jobs.Zone, Routing: cfg.RoutingConfig(), Serves: servesAccount(cfg)})
	res, err := openclaw.Apply(ctx, plan, openclaw.Target{Sessions: to, Pairing: to.pairing, Jobs: to.jobs, MaxPerRoom: cfg.Jobs.MaxPerRoom}, f.dry)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Plan     *openclaw.Plan      `json:"plan"`
			To       string              `json:"to"`
			Result   openclaw.Result     `json:"result"`
			Unmapped []openclaw.Unmapped `json:"unmapped"`
		}{plan, to.Kind() + " " + to.where, res, plan.Report.List()})
	}
	printImport(out, plan, to, res)
	if !cfg.Jobs.Enabled && res.JobsImported > 0 {
		fmt.Fprintf(out, "note: scheduled jobs are off (jobs.enabled: false): the %d imported job(s) fire once they are on\n", res.JobsImported)
	}
	if n := stale(plan, cfg.Session.Maintenance, time.Now()); n > 0 {
		fmt.Fprintf(out, "note: %d imported session(s) were last updated more than session.maintenance.pruneAfter (%s) ago: "+
			"the daemon's maintenance archives them at its next start (they stay recoverable); raise pruneAfter first to keep them current\n",
			n, cfg.Session.Maintenance.PruneAfter)
	}
	return nil
}

// servesAccount reports whether cfg serves a channel's account (the
// rooms an imported job may be delivered into).
func servesAccount(cfg *configs.Config) func(channel, account string) bool {
	return func(channel, account string) bool {
		var ids []string
		switch channel {
		case "telegram":
			ids = slices.Collect(maps.Keys(cfg.Channels.Telegram.Accounts))
		case "discord":
			ids = slices.Collect(maps.Keys(cfg.Channels.Discord.Accounts))
		}
		return slices.ContainsFunc(ids, func(id string) bool { return strings.EqualFold(id, account) })
	}
}

// stale counts the keys of p whose current session maintenance would
// archive (mode enforce, last updated before pruneAfter).
func stale(p *openclaw.Plan, m sessions.Maintenance, now time.Time) int {
	if m.Mode != sessions.MaintenanceEnforce || m.PruneAfter <= 0 {
		return 0
	}
	n := 0
	for _, a := range p.Agents {
		for _, k := range a.Keys {
			if k.Entry != nil && now.Sub(k.Entry.UpdatedAt) > m.PruneAfter {
				n++
			}
		}
	}
	return n
}

// openConfiguredSide opens the config's storage backend as a target,
// under its daemon lock (op names the command in errors).
func openConfiguredSide(ctx context.Context, cfg *configs.Config, op string) (*side, error) {
	f := migrateFlags{postgresURL: configPostgresURL(cfg), workers: 1}
	return openSide(ctx, cfg, f, cmp.Or(cfg.Storage.Backend, configs.StorageFiles), true, newDirLocksFor(op))
}

func printImport(out io.Writer, p *openclaw.Plan, to *side, res openclaw.Result) {
	verb := "import openclaw"
	if res.DryRun {
		verb += " (dry run: nothing written)"
	}
	fmt.Fprintf(out, "%s: %s -> %s (%s)\n", verb, p.Dir, to.Kind(), to.where)
	for _, a := range p.Agents {
		fmt.Fprintf(out, "agent %s (%s layout, %s): %d session keys\n", a.ID, a.Layout, a.Source, len(a.Items))
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  STATUS\tKEY\tMESSAGES\tARCHIVED\tOPENCLAW KEY")
		for _, it := range a.Items {
			src := ""
			if it.SourceKey != it.Key {
				src = it.SourceKey
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", it.Status, it.Key, it.Messages, it.Archived, src)
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(out, "session keys %d: %d imported, %d already present, %d conflicting (a session id another key holds)\n",
		res.Keys, res.Imported, res.Present, res.Conflicts)
	fmt.Fprintf(out, "messages %d, archived sessions %d; pairing approvals %d added, %d already present\n",
		res.Messages, res.Archived, res.Approvals, res.ApprovalsPresent)
	printImportJobs(out, p, res)
	p.Report.Print(out)
	if res.Imported > 0 && !res.DryRun {
		fmt.Fprintln(out, "the usage ledger is filled from transcripts by `gateway usage rebuild`")
	}
}

// printImportJobs lists the plan's cron jobs: what each became, or why
// it was skipped.
func printImportJobs(out io.Writer, p *openclaw.Plan, res openclaw.Result) {
	if len(p.Jobs) == 0 {
		return
	}
	fmt.Fprintf(out, "cron jobs %d: %d imported, %d already present, %d skipped\n", res.Jobs, res.JobsImported, res.JobsPresent, res.JobsSkipped)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATUS\tOPENCLAW JOB\tJOB\tSCHEDULE\tSESSION\tWHY")
	for _, it := range p.Jobs {
		id, sched, key := "-", "-", "-"
		if j := it.Job; j != nil {
			id, key, sched = j.ID, j.SessionKey, "once "+j.Schedule.At.UTC().Format(time.RFC3339)
			if j.Schedule.Recurring() {
				sched = j.Schedule.Cron + " " + j.Schedule.TZ
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", it.Status, it.SourceID, id, sched, key, orDash(it.Why))
	}
	_ = tw.Flush()
}
