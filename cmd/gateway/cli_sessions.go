package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func sessionsCmd(cfgPath *string) *cobra.Command {
	return group("sessions", "List, inspect, reset, delete, compact and send into sessions",
		sessionsListCmd(cfgPath), sessionsShowCmd(cfgPath),
		sessionsMutateCmd(cfgPath, "reset", "Start a new session for KEY (the old transcript is archived)"),
		sessionsMutateCmd(cfgPath, "delete", "Archive KEY's session and remove it from the index (recoverable)"),
		sessionsMutateCmd(cfgPath, "compact", "Summarise KEY's older history now"),
		sessionsSearchCmd(cfgPath),
		sessionsSendCmd(cfgPath),
	)
}

// listRow is one row of `sessions list --json`.
type listRow struct {
	AgentID       string    `json:"agentId"`
	SessionKey    string    `json:"sessionKey"`
	SessionID     string    `json:"sessionId"`
	Title         string    `json:"title,omitempty"`
	UpdatedAt     time.Time `json:"updatedAt"`
	TotalTokens   int64     `json:"totalTokens"`
	ContextTokens int64     `json:"contextTokens"`
	MessageCount  int       `json:"messageCount"`
	// WouldReset says the reset policy would roll the session over on its
	// next message (ResetReason: daily or idle).
	WouldReset  bool   `json:"wouldReset"`
	ResetReason string `json:"resetReason,omitempty"`
}

func sessionsListCmd(cfgPath *string) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently updated first, with whether the reset policy would roll them now",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				now := time.Now()
				rows, err := listRows(env, agent, now)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(env.out, rows)
				}
				printList(env.out, rows, now)
				return nil
			})
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "only this agent's sessions")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// listRows reads the sessions of agent (every agent when empty) with what
// the reset policy would do to them at now.
func listRows(env *cliEnv, agent string, now time.Time) ([]listRow, error) {
	var ids []string
	if agent != "" {
		a, err := knownAgent(env, "--agent", agent)
		if err != nil {
			return nil, err
		}
		ids = []string{a}
	} else {
		var err error
		if ids, err = agentIDs(env.cfg, env.state); err != nil {
			return nil, fmt.Errorf("sessions list: %w", err)
		}
	}
	rc := env.cfg.Session.ResetConfig()
	rows := []listRow{}
	for _, id := range ids {
		st, err := env.state.Store(id)
		if err != nil {
			return nil, fmt.Errorf("sessions list: agent %s: %w", id, err)
		}
		list, err := st.List()
		if err != nil {
			return nil, fmt.Errorf("sessions list: agent %s: %w", id, err)
		}
		for _, e := range list {
			row := listRow{AgentID: id, SessionKey: e.SessionKey, SessionID: e.SessionID, Title: e.Title,
				UpdatedAt: e.UpdatedAt, TotalTokens: e.TotalTokens, ContextTokens: e.ContextTokens,
				MessageCount: e.MessageCount}
			if k, err := routing.Parse(e.SessionKey); err == nil {
				row.WouldReset, row.ResetReason = sessions.Evaluate(rc, k, e, now)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func printList(w io.Writer, rows []listRow, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tID\tTITLE\tUPDATED\tTOKENS\tRESET")
	for _, r := range rows {
		reset := "-"
		if r.WouldReset {
			reset = "now (" + r.ResetReason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.SessionKey, r.SessionID, orDash(clipRunes(r.Title, 30)),
			ago(now, r.UpdatedAt), r.TotalTokens, reset)
	}
	_ = tw.Flush()
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String() + " ago"
	case d < 48*time.Hour:
		return d.Truncate(time.Minute).String() + " ago"
	default:
		return t.Local().Format("2006-01-02 15:04")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
