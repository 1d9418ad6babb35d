package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// sessionsSearchCmd is `gateway sessions search QUERY`: the transcripts of
// the current sessions, read through the storage seam's Searcher (beside a
// running daemon too: the files index is read, never written, here).
func sessionsSearchCmd(cfgPath *string) *cobra.Command {
	var (
		agent, room, since string
		limit              int
		asJSON             bool
	)
	c := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find messages in the current sessions' transcripts (every word must occur), newest first",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage("%s: want the words to search for", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := searchQuery(args, agent, room, since, limit)
			if err != nil {
				return err
			}
			return withStorage(cmd, *cfgPath, func(env *cliEnv) error {
				if agent != "" {
					if _, err := knownAgent(env, "--agent", agent); err != nil {
						return err
					}
				}
				hits, err := env.state.Search().Search(env.ctx, q)
				if errors.Is(err, sessions.ErrBadQuery) {
					return usage("%v", err)
				}
				if err != nil {
					return fmt.Errorf("sessions search: %w", err)
				}
				if asJSON {
					return printJSON(env.out, hits)
				}
				printHits(env.out, hits)
				return nil
			})
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "only this agent's sessions")
	c.Flags().StringVar(&room, "room", "", "only this room: a session key (with its threads/topics) or a peer id such as a Telegram chat id")
	c.Flags().StringVar(&since, "since", "", "only messages since: a duration (24h, 7d), a date (2026-11-01, from local midnight) or an RFC 3339 time")
	c.Flags().IntVar(&limit, "limit", sessions.DefaultSearchLimit, fmt.Sprintf("at most this many hits (1..%d)", sessions.MaxSearchLimit))
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// searchQuery builds the query of the command line; a mistake is a usage
// error (exit 2).
func searchQuery(words []string, agent, room, since string, limit int) (sessions.SearchQuery, error) {
	q := sessions.SearchQuery{Text: strings.Join(words, " "), Room: room, Limit: limit}
	if agent != "" {
		a, err := routing.NormalizeID(agent)
		if err != nil {
			return q, usage("--agent %q: %v", agent, err)
		}
		q.Agents = []string{a}
	}
	var err error
	if q.Since, err = sessions.ParseSince(since, time.Now()); err != nil {
		return q, usage("--since: %v", err)
	}
	// A date is the operator's day, as the TIME column prints it (local
	// time), not a UTC day that starts hours before or after it.
	if d, err := time.ParseInLocation(time.DateOnly, strings.TrimSpace(since), time.Local); err == nil {
		q.Since = d
	}
	if q, err = q.Normalize(); err != nil {
		return q, usage("%v", err)
	}
	return q, nil
}

func printHits(w io.Writer, hits []sessions.SearchHit) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "no messages match")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tAGENT\tKEY\tROLE\tSNIPPET")
	for _, h := range hits {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.At.Local().Format("2006-01-02 15:04"), h.Agent, h.SessionKey,
			h.Role, strings.ReplaceAll(h.Snippet, "\t", " "))
	}
	_ = tw.Flush()
}
