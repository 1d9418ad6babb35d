package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func sessionsCmd(cfgPath *string) *cobra.Command {
	return group("sessions", "List, inspect, reset, delete and compact sessions",
		sessionsListCmd(cfgPath), sessionsShowCmd(cfgPath),
		sessionsMutateCmd(cfgPath, "reset", "Start a new session for KEY (the old transcript is archived)"),
		sessionsMutateCmd(cfgPath, "delete", "Archive KEY's session and remove it from the index (recoverable)"),
		sessionsMutateCmd(cfgPath, "compact", "Summarise KEY's older history now"),
		sessionsSearchCmd(cfgPath),
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
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			state, err := openSessions(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer state.Close()
			ids, err := agentIDs(cfg, state)
			if err != nil {
				return fmt.Errorf("sessions list: %w", err)
			}
			if agent != "" {
				a, err := routing.NormalizeID(agent)
				if err != nil {
					return usage("--agent %q: %v", agent, err)
				}
				ids = []string{a}
			}
			now := time.Now()
			rc := cfg.Session.ResetConfig()
			rows := []listRow{}
			for _, id := range ids {
				st, err := state.Store(id)
				if err != nil {
					return fmt.Errorf("sessions list: agent %s: %w", id, err)
				}
				list, err := st.List()
				if err != nil {
					return fmt.Errorf("sessions list: agent %s: %w", id, err)
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
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			printList(cmd.OutOrStdout(), rows, now)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "only this agent's sessions")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
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

// found is a session named on the command line.
type found struct {
	AgentID string
	Key     routing.Key
	Entry   sessions.Entry
	Store   sessions.AgentStore
}

// findSession resolves arg, a session key or a session id (searched in
// every agent).
func findSession(state sessions.Backend, cfg *configs.Config, arg string) (found, error) {
	if k, err := routing.Parse(arg); err == nil {
		st, err := state.Store(k.Agent)
		if err != nil {
			return found{}, err
		}
		e, ok, err := st.Get(k)
		if err != nil {
			return found{}, err
		}
		if !ok {
			return found{}, fmt.Errorf("session %s: %w", arg, sessions.ErrNotFound)
		}
		return found{AgentID: k.Agent, Key: k, Entry: e, Store: st}, nil
	}
	ids, err := agentIDs(cfg, state)
	if err != nil {
		return found{}, fmt.Errorf("session %s: %w", arg, err)
	}
	for _, id := range ids {
		st, err := state.Store(id)
		if err != nil {
			return found{}, err
		}
		e, ok, err := st.GetByID(arg)
		if err != nil && !errors.Is(err, sessions.ErrNotFound) {
			return found{}, err
		}
		if ok {
			k, err := routing.Parse(e.SessionKey)
			if err != nil {
				return found{}, fmt.Errorf("session %s: key in the index: %w", arg, err)
			}
			return found{AgentID: id, Key: k, Entry: e, Store: st}, nil
		}
	}
	return found{}, fmt.Errorf("session %s: not a session key, and no agent has a session with this id: %w", arg, sessions.ErrNotFound)
}

func sessionsShowCmd(cfgPath *string) *cobra.Command {
	var asJSON, withContext bool
	c := &cobra.Command{
		Use:   "show KEY",
		Short: "Show a session (KEY or session id) and its history; --context prints exactly what the model is sent",
		Args:  exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			state, err := openSessions(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer state.Close()
			f, err := findSession(state, cfg, args[0])
			if err != nil {
				return err
			}
			t, err := f.Store.Transcript(f.Entry.SessionID)
			if err != nil {
				return err
			}
			v, err := showSession(cmd.Context(), f.AgentID, f.Entry, t, withContext)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, v)
			}
			printEntry(out, f)
			fmt.Fprintln(out)
			for _, m := range v.Messages {
				printMessage(out, m)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&withContext, "context", false, "print the rebuilt model context (compaction summary, kept tail) instead of the full history")
	return c
}

func printEntry(w io.Writer, f found) {
	e := f.Entry
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", k, v) }
	row("agent", f.AgentID)
	row("key", e.SessionKey)
	row("id", e.SessionID)
	row("title", orDash(e.Title))
	if e.Label != "" {
		row("label", e.Label)
	}
	row("channel", orDash(e.Channel)+" "+e.ChatType)
	row("created", e.CreatedAt.Local().Format(time.RFC3339))
	row("started", e.SessionStartedAt.Local().Format(time.RFC3339))
	row("last interaction", e.LastInteractionAt.Local().Format(time.RFC3339))
	row("updated", e.UpdatedAt.Local().Format(time.RFC3339))
	model := e.Model
	if e.ModelOverride != "" {
		model = e.ModelOverride + " (override)"
	}
	row("model", orDash(model))
	row("queue mode", orDash(e.QueueMode))
	row("messages", e.MessageCount)
	row("tokens", fmt.Sprintf("in %d, out %d, total %d, context %d", e.InputTokens, e.OutputTokens, e.TotalTokens, e.ContextTokens))
	row("compactions", e.CompactionCount)
	_ = tw.Flush()
}

func printMessage(w io.Writer, m sessions.Message) {
	at := ""
	if m.Timestamp > 0 {
		at = time.UnixMilli(m.Timestamp).Local().Format("2006-01-02 15:04:05") + " "
	}
	var parts []string
	for _, c := range m.Content {
		switch c.Type {
		case sessions.BlockText:
			parts = append(parts, c.Text)
		case sessions.BlockToolCall:
			parts = append(parts, fmt.Sprintf("[tool call %s %s %s]", c.ID, c.Name, string(c.Arguments)))
		case sessions.BlockImage:
			parts = append(parts, "[image]")
		case sessions.BlockThinking:
			parts = append(parts, "[thinking]")
		}
	}
	role := m.Role
	if m.Role == sessions.RoleToolResult {
		role = "toolResult " + m.ToolName + " " + m.ToolCallID
		if m.IsError {
			role += " (error)"
		}
	}
	fmt.Fprintf(w, "%s%s: %s\n", at, role, strings.Join(parts, " "))
}

func sessionsMutateCmd(cfgPath *string, op, short string) *cobra.Command {
	var noDaemon bool
	var instructions string
	c := &cobra.Command{
		Use:   op + " KEY",
		Short: short + ". Goes through the running daemon when it answers, else acts on the store directly.",
		Args:  exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			state, err := openSessions(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer state.Close()
			f, err := findSession(state, cfg, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if dc := newDaemonClient(cfg); !noDaemon && dc.alive(ctx) {
				return mutateViaDaemon(ctx, dc, out, op, f, instructions)
			}
			return mutateDirect(ctx, cfg, state, out, op, f, instructions)
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
		Agents: cfg.Agents.List, Logger: zap.NewNop(), Prices: agents.PricesFrom(cfg.Providers)})
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
