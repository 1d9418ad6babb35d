package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// -mode compare measures the two ratios issue 21 sets targets for — the
// files backend's burst against the floor's (≥ 0.6×) and the postgres
// backend's against the files backend's (≥ 0.7×) — the way they can be
// trusted on a shared machine: -runs rounds, each a burst of the floor,
// of the context floor (floorcontext.go), then of the files backend, then
// (with -postgres) of the postgres backend, one right after the other.
// Each round's ratios compare runs made seconds apart, so a load that
// drifts over minutes (other tenants' CPU, the disk's fsync latency, which
// moved the files backend between 1100 and 1650 msgs/s within ten minutes
// on 2026-12-02) moves both sides of a ratio; the medians of the rounds'
// ratios are the figures to quote.
// Every run prints its whole report as -mode burst does.
//
//	go run ./cmd/gateway-bench -gateway /tmp/gateway -mode compare -runs 5 -n 2000 -chats 100 \
//		-postgres 'postgres:///postgres?host=/var/run/postgresql'

// compareKinds are the runs of a round, in order.
func compareKinds(o options) []string {
	if o.postgres != "" {
		return []string{"floor", "floor-context", "files", "postgres"}
	}
	return []string{"floor", "floor-context", "files"}
}

// compareFlags names what -mode compare does not take: it runs the floor
// and the backends itself, one daemon each, as bursts.
func compareFlags(o options) error {
	switch {
	case o.mode != "compare":
		return nil
	case o.floor:
		return errors.New("-mode compare runs the floor itself: drop -floor")
	case o.replicas > 0 || o.sqlite:
		return errors.New("-mode compare runs one daemon on files and, with -postgres, one on postgres: drop -replicas and -sqlite")
	case o.tools > 0 || o.streaming != "off":
		return errors.New("-mode compare runs what the floor can: no -tools, -streaming off")
	case o.runs < 1:
		return fmt.Errorf("-mode compare: -runs %d: want at least 1", o.runs)
	}
	return nil
}

// compare runs o.runs rounds (see the top of this file) and prints each
// round's line and the medians.
func compare(ctx context.Context, o options) error {
	kinds := compareKinds(o)
	dir, err := os.MkdirTemp("", "gateway-bench-capture-")
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	defer os.RemoveAll(dir)
	contextFile, err := captureContext(ctx, o, dir)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	var rounds []map[string]summary
	for i := range o.runs {
		r := map[string]summary{}
		for _, k := range kinds {
			so := o
			so.mode, so.floor = "burst", strings.HasPrefix(k, "floor")
			so.floorContext, so.contextFile = k == "floor-context", contextFile
			if k != "postgres" {
				so.postgres, so.roundTrips = "", false
			}
			fmt.Printf("--- compare round %d of %d: %s\n", i+1, o.runs, k)
			s, err := runTraffic(ctx, so)
			if err != nil {
				return fmt.Errorf("compare round %d, %s: %w", i+1, k, err)
			}
			r[k] = s
		}
		rounds = append(rounds, r)
		fmt.Println(compareRound(i+1, r, kinds))
	}
	fmt.Println(compareMedians(rounds, kinds))
	return nil
}

// ratio is one of issue 21's ratios: num's throughput over den's, and
// its target (0: none, a ratio printed to explain the others).
type ratio struct {
	num, den string
	target   float64
}

func (q ratio) name() string { return q.num + "/" + q.den }

// of is q in round r; false when r lacks either side.
func (q ratio) of(r map[string]summary) (float64, bool) {
	n, okN := r[q.num]
	d, okD := r[q.den]
	if !okN || !okD || d.throughput <= 0 {
		return 0, false
	}
	return n.throughput / d.throughput, true
}

// ratios are issue 21's ratios, in the order printed, then the files
// backend's against the context floor: what keeping costs alone.
var ratios = []ratio{{"files", "floor", 0.6}, {"postgres", "files", 0.7}, {"files", "floor-context", 0}}

// compareRound is one round's line: throughputs and ratios.
func compareRound(n int, r map[string]summary, kinds []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "compare round=%d", n)
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%.0f", k, r[k].throughput)
	}
	b.WriteString(" msgs/s")
	for _, q := range ratios {
		if v, ok := q.of(r); ok {
			fmt.Fprintf(&b, " %s=%.2f", q.name(), v)
		}
	}
	return b.String()
}

// compareMedians is the closing line: the medians over the rounds of each
// kind's throughput, daemon and harness CPU per message, and of each
// round's ratios, with the targets.
func compareMedians(rounds []map[string]summary, kinds []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "compare medians of %d rounds:", len(rounds))
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%.0f msgs/s (cpu %.3f, harness %.3f ms/msg)", k,
			median(rounds, func(r map[string]summary) float64 { return r[k].throughput }),
			median(rounds, func(r map[string]summary) float64 { return r[k].cpuPerMsg }),
			median(rounds, func(r map[string]summary) float64 { return r[k].harnessPerMsg }))
	}
	for _, q := range ratios {
		if !slices.Contains(kinds, q.num) || !slices.Contains(kinds, q.den) {
			continue
		}
		fmt.Fprintf(&b, " %s=%.2f", q.name(), median(rounds, func(r map[string]summary) float64 { v, _ := q.of(r); return v }))
		if q.target > 0 {
			fmt.Fprintf(&b, " (target %.1f)", q.target)
		}
	}
	return b.String()
}

// median is the median of f over rounds (the mean of the middle two for an
// even count); 0 for none.
func median(rounds []map[string]summary, f func(map[string]summary) float64) float64 {
	if len(rounds) == 0 {
		return 0
	}
	vs := make([]float64, len(rounds))
	for i, r := range rounds {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}
