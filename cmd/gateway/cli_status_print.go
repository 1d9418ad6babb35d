package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gateway/gateway/gatewayd"
)

// printStatus prints a status for a person: the verdict and its reasons
// first, then one section per part.
func printStatus(w io.Writer, st gatewayd.Status) {
	now := st.CheckedAt
	fmt.Fprintf(w, "gateway: %s (up %s)\n", strings.ToUpper(st.Overall), now.Sub(st.StartedAt).Round(time.Second))
	for _, p := range st.Problems {
		fmt.Fprintf(w, "  ! %s\n", p)
	}

	fmt.Fprintln(w, "\nCHANNELS")
	if len(st.Channels) == 0 {
		fmt.Fprintln(w, "  none configured")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CHANNEL\tACCOUNT\tMODE\tSTATE\tSINCE\tLAST IN\tLAST OUT\tLAST ERROR")
		for _, c := range st.Channels {
			state := string(c.State)
			if c.State == gatewayd.ConnStandby && c.Leader != "" {
				state += " (leader " + c.Leader + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Channel, c.Account, orDash(c.Mode), state,
				ago(now, c.Since), ago(now, c.LastInbound), ago(now, c.LastOutbound), lastErr(now, c.LastError, c.LastErrorAt))
		}
		_ = tw.Flush()
	}

	fmt.Fprintln(w, "\nPROVIDERS")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tBREAKER\tLAST ERROR")
	for _, p := range st.Providers {
		b := p.Breaker.State
		if !p.Breaker.OpenUntil.IsZero() && b != "closed" {
			b += " until " + p.Breaker.OpenUntil.Local().Format("15:04:05")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, b, lastErr(now, p.Breaker.LastError, p.Breaker.LastErrorAt))
	}
	_ = tw.Flush()
	for _, f := range st.Fallbacks {
		fmt.Fprintf(w, "  fallback %s -> %s: %d calls\n", f.From, f.To, f.Count)
	}

	if len(st.MCP) > 0 {
		fmt.Fprintln(w, "\nMCP SERVERS")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tSTATE\tTOOLS\tRESTARTS\tERROR")
		for _, m := range st.MCP {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", m.Name, m.State, len(m.Tools), m.Restarts, orDash(m.Error))
		}
		_ = tw.Flush()
	}

	l := st.Lanes
	fmt.Fprintln(w, "\nLANES")
	var runs []string
	for _, c := range slices.Sorted(maps.Keys(l.Caps)) {
		runs = append(runs, fmt.Sprintf("%s %d/%d", c, l.Running[c], l.Caps[c]))
	}
	fmt.Fprintf(w, "  running: %s; %d queued; %d sessions busy, %d waiting for a slot\n", strings.Join(runs, ", "), l.Queued, l.Busy, l.Waiting)
	for _, t := range l.Top {
		run := ""
		if t.Running {
			run = ", running"
		}
		fmt.Fprintf(w, "  %4d queued  %s (oldest %s%s)\n", t.Queued, t.SessionKey, ago(now, t.Oldest), run)
	}

	d := st.Delivery
	fmt.Fprintln(w, "\nDELIVERY")
	fmt.Fprintf(w, "  journal: %d pending; outbox: %d replies undelivered; %d write failures\n", d.Pending, d.Replies, d.WriteFailures)
	given := fmt.Sprintf("  given up since start: %d", d.GivenUpTotal)
	if len(d.GivenUp) > 0 {
		var by []string
		for _, r := range slices.Sorted(maps.Keys(d.GivenUp)) {
			by = append(by, fmt.Sprintf("%s %d", r, d.GivenUp[r]))
		}
		given += " (" + strings.Join(by, ", ") + ")"
	}
	fmt.Fprintln(w, given)
	if d.DeadLetters > 0 {
		fmt.Fprintf(w, "  dead letters kept: %d (gateway deliveries list --failed)\n", d.DeadLetters)
	}

	s := st.Storage
	fmt.Fprintln(w, "\nSTORAGE")
	health := "healthy"
	if !s.Healthy {
		health = "FAILING: " + strings.Join(nonEmpty(s.Err, s.JournalError), "; ")
	}
	fmt.Fprintf(w, "  %s at %s: %s (probe %s)\n", s.Kind, s.Location, health, s.Latency.Round(time.Microsecond))

	if r := st.Replicas; r != nil {
		fmt.Fprintln(w, "\nREPLICAS")
		fmt.Fprintf(w, "  this replica: %s\n", r.ReplicaID)
		if r.Error != "" {
			fmt.Fprintf(w, "  database not readable: %s\n", r.Error)
		}
		for _, rep := range r.Replicas {
			stale := ""
			if rep.Stale {
				stale = " STALE"
			}
			fmt.Fprintf(w, "  %s  %s pid %d, %s, seen %s%s\n", rep.ID, rep.Host, rep.PID, rep.Version, ago(now, rep.SeenAt), stale)
		}
		for _, ld := range r.Leaders {
			fmt.Fprintf(w, "  leader %s: %s\n", ld.Role, ld.Holder)
		}
		if r.Ingress.Unclaimed > 0 {
			fmt.Fprintf(w, "  unclaimed ingress: %d (oldest %s)\n", r.Ingress.Unclaimed, r.Ingress.OldestAge.Round(time.Second))
		}
	}
}

func lastErr(now time.Time, msg string, at time.Time) string {
	if msg == "" {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", msg, ago(now, at))
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
