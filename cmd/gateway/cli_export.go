package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/routing"
)

func exportCmd(cfgPath *string) *cobra.Command {
	return group("export", "Write this gateway's state in another system's format", exportOpenClawCmd(cfgPath))
}

const exportOpenClawLong = `Write the sessions of the configured storage backend into DIR in
OpenClaw's JSON-era layout: agents/<id>/sessions/sessions.json (one entry
per session key, clocks in epoch milliseconds) and one <sessionId>.jsonl
transcript per session (archived ones as <sessionId>.jsonl.reset.<ts>).
OpenClaw's own ` + "`openclaw doctor --fix`" + ` migrates that layout into its SQLite state, so
an operator can go back. Pairing, jobs, the journal and usage are not
written. It refuses to write over an existing sessions.json, and while a
daemon holds the state.`

func exportOpenClawCmd(cfgPath *string) *cobra.Command {
	var (
		to     string
		agents []string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "openclaw --to DIR [--agent ID ...]",
		Short: "Export the sessions in OpenClaw's JSON-era layout (sessions.json + JSONL), which OpenClaw's doctor imports",
		Long:  exportOpenClawLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usage("export openclaw: --to DIR is required")
			}
			for i, a := range agents {
				id, err := routing.NormalizeID(a)
				if err != nil {
					return usage("export openclaw: --agent %q: %v", a, err)
				}
				agents[i] = id
			}
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				return runExportOpenClaw(env.ctx, env.out, env.cfg, to, agents, asJSON)
			})
		},
	}
	c.Flags().StringVar(&to, "to", "", "the directory to write (an OpenClaw state dir layout)")
	c.Flags().StringSliceVar(&agents, "agent", nil, "export only this agent (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return c
}

func runExportOpenClaw(ctx context.Context, out io.Writer, cfg *configs.Config, to string, agents []string, asJSON bool) error {
	abs, err := filepath.Abs(to)
	if err != nil {
		return fmt.Errorf("export openclaw: %w", err)
	}
	from, err := openConfiguredSide(ctx, cfg, "export openclaw")
	if err != nil {
		return err
	}
	defer from.close()
	res, err := openclaw.Export(ctx, from, abs, agents)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "export openclaw: %s (%s) -> %s\n", from.Kind(), from.where, abs)
	fmt.Fprintf(out, "  agents %d, sessions %d, archived %d, transcripts %d\n", res.Agents, res.Sessions, res.Archived, res.Transcripts)
	return nil
}
