package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// sessionView is what `sessions show KEY --json` prints; `storage migrate`
// renders it on both backends to verify a copy.
type sessionView struct {
	AgentID  string             `json:"agentId"`
	Messages []sessions.Message `json:"messages"`
	Session  sessions.Entry     `json:"session"`
	// Summary is the latest compaction summary (with --context only).
	Summary *string `json:"summary,omitempty"`
}

// showSession reads what `sessions show` prints for the session e of
// agentID from its transcript t: the rebuilt model context (withContext)
// or the whole history.
func showSession(ctx context.Context, agentID string, e sessions.Entry, t sessions.TranscriptLog, withContext bool) (sessionView, error) {
	v := sessionView{AgentID: agentID, Session: e}
	if withContext {
		cx, err := t.Context(ctx)
		if err != nil {
			return v, fmt.Errorf("sessions show: context: %w", err)
		}
		v.Messages, v.Summary = cx.Messages, &cx.Summary
	} else {
		msgs, err := t.History(ctx)
		if err != nil {
			return v, fmt.Errorf("sessions show: history: %w", err)
		}
		v.Messages = msgs
	}
	if v.Messages == nil {
		v.Messages = []sessions.Message{}
	}
	return v, nil
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
	ids, err := agentIDs(cfg, state)
	if err != nil {
		return found{}, fmt.Errorf("session %s: %w", arg, err)
	}
	if k, err := routing.Parse(arg); err == nil {
		// An agent nobody configured and nothing stored is a typo: say so,
		// and do not open a store for it (the files backend would leave
		// its directory behind).
		if !slices.Contains(ids, k.Agent) {
			return found{}, fmt.Errorf("session %s: no agent %s (agents: %s): %w", arg, k.Agent, strings.Join(ids, ", "), sessions.ErrNotFound)
		}
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
	} else if strings.HasPrefix(arg, "agent:") {
		// Shaped like a key (no session id is): say what is wrong with it.
		return found{}, usage("session: %v", err) // err quotes arg, clipped
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
	return found{}, fmt.Errorf("session %q: not a session key, and no agent has a session with this id: %w", sessions.Clip(arg), sessions.ErrNotFound)
}

func sessionsShowCmd(cfgPath *string) *cobra.Command {
	var asJSON, withContext bool
	c := &cobra.Command{
		Use:   "show KEY",
		Short: "Show a session (KEY or session id) and its history; --context prints exactly what the model is sent",
		Args:  exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				f, err := findSession(env.state, env.cfg, args[0])
				if err != nil {
					return err
				}
				t, err := f.Store.Transcript(f.Entry.SessionID)
				if err != nil {
					return err
				}
				v, err := showSession(env.ctx, f.AgentID, f.Entry, t, withContext)
				if err != nil {
					return err
				}
				var preview turnPreview
				if withContext {
					if preview, err = previewTurn(env.cfg, f); err != nil {
						return err
					}
				}
				if asJSON && withContext {
					return printJSON(env.out, struct {
						sessionView
						turnPreview
					}{v, preview})
				}
				if asJSON {
					return printJSON(env.out, v)
				}
				printEntry(env.out, f)
				fmt.Fprintln(env.out)
				if withContext {
					printPreview(env.out, preview)
					if v.Summary != nil && *v.Summary != "" {
						fmt.Fprintf(env.out, "compaction summary:\n  %s\n", strings.ReplaceAll(*v.Summary, "\n", "\n  "))
					}
					fmt.Fprintln(env.out)
				}
				for _, m := range v.Messages {
					printMessage(env.out, m)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&withContext, "context", false, "print what a turn sends the model: the system prompt, the tools, the compaction summary and the kept messages (instead of the full history)")
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
		model = e.ModelFor() + " (override)"
	}
	row("model", orDash(model))
	if e.ThinkingLevel != "" {
		row("thinking", e.ThinkingLevel)
	}
	if e.GroupActivation != "" {
		row("activation", e.GroupActivation)
	}
	row("queue mode", orDash(e.QueueMode))
	row("delivered to", deliveredTo(e.DeliveryContext))
	if e.SpawnedBy != "" {
		row("spawned by", e.SpawnedBy)
		row("subagent", subagentOptions(e))
	}
	row("messages", e.MessageCount)
	row("tokens", fmt.Sprintf("in %d, out %d, total %d, context %d", e.InputTokens, e.OutputTokens, e.TotalTokens, e.ContextTokens))
	row("compactions", e.CompactionCount)
	_ = tw.Flush()
}

// deliveredTo spells where the latest reply went: channel/account chat
// (thread), or "-" before the first.
func deliveredTo(d sessions.DeliveryContext) string {
	if d == (sessions.DeliveryContext{}) {
		return "-"
	}
	s := orDash(d.Channel)
	if d.AccountID != "" {
		s += "/" + d.AccountID
	}
	s += " chat " + orDash(d.To)
	if d.ThreadID != "" {
		s += " thread " + d.ThreadID
	}
	return s
}

// subagentOptions spells a child's spawn options: its cleanup, its run
// timeout and, while it runs, when its run began.
func subagentOptions(e sessions.Entry) string {
	cleanup := e.SubagentCleanup
	if cleanup == "" {
		cleanup = sessions.CleanupKeep
	}
	s := "cleanup " + cleanup
	if e.RunTimeoutSeconds > 0 {
		s += fmt.Sprintf(", run timeout %ds", e.RunTimeoutSeconds)
	} else {
		s += ", run timeout: the agent's"
	}
	if e.RunStartedAt > 0 {
		s += ", running since " + time.UnixMilli(e.RunStartedAt).Local().Format(time.RFC3339)
	}
	return s
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
