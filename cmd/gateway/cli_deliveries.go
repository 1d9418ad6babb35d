package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/sessions"
)

// deliveriesCmd is `gateway deliveries list --failed|resubmit|discard`:
// the dead letters (messages and replies given up), through the running
// daemon's API.
func deliveriesCmd(cfgPath *string) *cobra.Command {
	return group("deliveries", "List, resubmit or discard the messages and replies given up (dead letters), through the running daemon",
		deliveriesListCmd(cfgPath), deliveriesResubmitCmd(cfgPath), deliveriesDiscardCmd(cfgPath))
}

func deliveriesListCmd(cfgPath *string) *cobra.Command {
	var failed, asJSON bool
	c := &cobra.Command{
		Use:   "list --failed",
		Short: "List the messages and replies given up, newest first (GET /api/deliveries/failed)",
		Long: "List the dead letters: inbound messages given up after messages.delivery.maxFailures failed turns\n" +
			"or maxCrashes process deaths, and replies that could not be delivered, with why and when.\n" +
			"At most messages.delivery.deadLetters are kept (default 1000; the oldest go). Pending work\n" +
			"(journal and outbox backlog) is in `gateway status`.",
		Example: "  gateway deliveries list --failed\n  gateway deliveries list --failed --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !failed {
				return usage("%s: say --failed (the dead letters); the journal and outbox backlog is in `gateway status`", cmd.CommandPath())
			}
			return withDaemon(cmd, *cfgPath, func(env *cliEnv, dc *daemonClient) error {
				var body struct {
					Letters []sessions.DeadLetter `json:"letters"`
				}
				if err := dc.do(env.ctx, http.MethodGet, "/api/deliveries/failed", nil, &body); err != nil {
					return fmt.Errorf("deliveries list: %w", err)
				}
				if asJSON {
					if body.Letters == nil {
						body.Letters = []sessions.DeadLetter{}
					}
					return printJSON(env.out, body)
				}
				printLetters(env.out, body.Letters, time.Now())
				return nil
			})
		},
	}
	c.Flags().BoolVar(&failed, "failed", false, "list the dead letters (messages and replies given up)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func deliveriesResubmitCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "resubmit ID",
		Short: "Run a given-up message again, or send a given-up reply from its first undelivered chunk (once, however often asked)",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDaemon(cmd, *cfgPath, func(env *cliEnv, dc *daemonClient) error {
				var body struct {
					Resubmitted sessions.DeadLetter `json:"resubmitted"`
				}
				if err := dc.do(env.ctx, http.MethodPost, "/api/deliveries/failed/"+url.PathEscape(args[0])+"/resubmit", nil, &body); err != nil {
					return fmt.Errorf("deliveries resubmit: %w", err)
				}
				fmt.Fprintf(env.out, "resubmitted %s %s (%s)\n", body.Resubmitted.Kind, body.Resubmitted.ID, body.Resubmitted.SessionKey)
				return nil
			})
		},
	}
}

func deliveriesDiscardCmd(cfgPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "discard ID",
		Short: "Delete a dead letter without running or sending it",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDaemon(cmd, *cfgPath, func(env *cliEnv, dc *daemonClient) error {
				if err := dc.do(env.ctx, http.MethodDelete, "/api/deliveries/failed/"+url.PathEscape(args[0]), nil, nil); err != nil {
					return fmt.Errorf("deliveries discard: %w", err)
				}
				fmt.Fprintf(env.out, "discarded %s\n", args[0])
				return nil
			})
		},
	}
}

// withDaemon loads the config and runs fn with a client of the running
// daemon; it fails clearly when none answers.
func withDaemon(cmd *cobra.Command, cfgPath string, fn func(env *cliEnv, dc *daemonClient) error) error {
	return withConfig(cmd, cfgPath, func(env *cliEnv) error {
		dc := newDaemonClient(env.cfg)
		if dc == nil {
			return usage("%s: http.listen %q is not host:port", cmd.CommandPath(), env.cfg.HTTP.Listen)
		}
		if !dc.alive(env.ctx) {
			return fmt.Errorf("%s: %w", cmd.CommandPath(), errNoDaemon)
		}
		return fn(env, dc)
	})
}

// printLetters prints dead letters as a table and, below, each one's text
// (the message, or the first undelivered chunk of a reply).
func printLetters(w io.Writer, ls []sessions.DeadLetter, now time.Time) {
	if len(ls) == 0 {
		fmt.Fprintln(w, "no dead letters")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATE\tGIVEN UP\tSESSION\tREASON\tTEXT")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%q\n", l.ID, l.Kind, l.State, ago(now, l.At), orDash(l.SessionKey),
			clip(l.Reason, 60), clip(letterText(l), 40))
	}
	_ = tw.Flush()
}

// letterText is what a letter says: the message's text, or the reply's
// first undelivered chunk.
func letterText(l sessions.DeadLetter) string {
	switch {
	case l.Record != nil:
		var env struct {
			Inbound *struct {
				Text string `json:"text"`
			} `json:"inbound"`
			Agent *struct {
				Message struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			} `json:"agent"`
		}
		if json.Unmarshal(l.Record.Payload, &env) != nil {
			return ""
		}
		if env.Inbound != nil {
			return env.Inbound.Text
		}
		if env.Agent != nil && len(env.Agent.Message.Content) > 0 {
			return env.Agent.Message.Content[0].Text
		}
	case l.Reply != nil && l.Reply.Sent < len(l.Reply.Chunks):
		return l.Reply.Chunks[l.Reply.Sent]
	}
	return ""
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
