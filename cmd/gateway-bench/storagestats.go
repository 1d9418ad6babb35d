package main

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What the messages cost the database, read from the daemons' own
// metrics (issue 21): gateway_storage_roundtrips_total and
// gateway_storage_commits_total, labelled by the backend operation
// (sessions/pgstore/roundtrips.go). Unlike -roundtrips' proxy they need
// nothing between the daemon and the server, and they say which
// operation spent what.

const (
	tripsMetric   = "gateway_storage_roundtrips_total"
	commitsMetric = "gateway_storage_commits_total"
)

// opCounts is one reading: counter name → op → value, summed over the
// daemons.
type opCounts map[string]map[string]float64

// scrapeOps reads the per-operation storage counters of every daemon.
func scrapeOps(daemons []*daemon) opCounts {
	out := opCounts{tripsMetric: {}, commitsMetric: {}}
	for _, d := range daemons {
		scrapeOpsOf("http://"+d.httpAddr, out)
	}
	return out
}

// scrapeOpsOf adds the storage counters of the daemon at base to out.
func scrapeOpsOf(base string, out opCounts) {
	client := &http.Client{Timeout: 2 * time.Second}
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for name, byOp := range out {
			rest, ok := strings.CutPrefix(line, name+`{op="`)
			if !ok {
				continue
			}
			op, val, ok := strings.Cut(rest, `"} `)
			if !ok {
				continue
			}
			if v, err := strconv.ParseFloat(val, 64); err == nil {
				byOp[op] += v
			}
		}
	}
}

// storagePerMessage renders the counters' growth between two readings per
// message of n: the totals, then each operation's round trips/commits.
// It is empty when the daemons export no such counters (files backend).
func storagePerMessage(before, after opCounts, n int) string {
	if len(after[tripsMetric]) == 0 || n == 0 {
		return ""
	}
	delta := func(name, op string) float64 { return (after[name][op] - before[name][op]) / float64(n) }
	var ops []string
	var trips, commits float64
	for op := range after[tripsMetric] {
		t, c := delta(tripsMetric, op), delta(commitsMetric, op)
		trips, commits = trips+t, commits+c
		if t != 0 || c != 0 {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	var b strings.Builder
	fmt.Fprintf(&b, "storage_roundtrips_per_msg=%.2f storage_commits_per_msg=%.2f (daemon metrics, every replica)\n", trips, commits)
	b.WriteString("storage_per_op (round trips/commits per msg):")
	for _, op := range ops {
		fmt.Fprintf(&b, " %s=%.2f/%.2f", op, delta(tripsMetric, op), delta(commitsMetric, op))
	}
	return b.String()
}
