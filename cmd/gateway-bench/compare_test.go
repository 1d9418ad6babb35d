package main

import (
	"strings"
	"testing"
)

// TestCompareMediansOfRoundRatios: the closing line's ratios are the
// medians of each round's own ratios (runs seconds apart), not ratios of
// the kinds' medians, and each names its target (the context floor's has
// none).
func TestCompareMediansOfRoundRatios(t *testing.T) {
	round := func(floor, files, pg float64) map[string]summary {
		return map[string]summary{"floor": {throughput: floor}, "floor-context": {throughput: floor / 2},
			"files": {throughput: files, cpuPerMsg: 0.7}, "postgres": {throughput: pg}}
	}
	// A load that drifts: the ratios hold while the throughputs move.
	rounds := []map[string]summary{round(4000, 2000, 1000), round(2000, 1200, 900), round(3000, 900, 300)}
	kinds := []string{"floor", "floor-context", "files", "postgres"}
	got := compareMedians(rounds, kinds)
	for _, want := range []string{"compare medians of 3 rounds:", "floor=3000 msgs/s", "files=1200 msgs/s (cpu 0.700",
		"files/floor=0.50 (target 0.6)", "postgres/files=0.50 (target 0.7)", "files/floor-context=1.00"} {
		if !strings.Contains(got, want) {
			t.Errorf("medians line %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "floor-context=1.00 (target") {
		t.Errorf("medians line %q gives the context floor's ratio a target", got)
	}
	if line := compareRound(2, rounds[1], kinds); line != "compare round=2 floor=2000 floor-context=1000 files=1200 postgres=900 msgs/s files/floor=0.60 postgres/files=0.75 files/floor-context=1.20" {
		t.Errorf("round line %q", line)
	}
	// Without postgres there is no postgres ratio.
	if got := compareMedians(rounds[:2], []string{"floor", "files"}); strings.Contains(got, "postgres") {
		t.Errorf("medians line without postgres names it: %q", got)
	}
	if m := median(rounds[:2], func(r map[string]summary) float64 { return r["files"].throughput }); m != 1600 {
		t.Errorf("median of two = %v, want their mean 1600", m)
	}
}

// TestCompareFlags: -mode compare refuses the flags of runs it does not
// make.
func TestCompareFlags(t *testing.T) {
	ok := options{mode: "compare", runs: 3, streaming: "off"}
	if err := compareFlags(ok); err != nil {
		t.Fatalf("plain compare refused: %v", err)
	}
	for name, o := range map[string]options{
		"floor":     {mode: "compare", runs: 3, streaming: "off", floor: true},
		"replicas":  {mode: "compare", runs: 3, streaming: "off", replicas: 2},
		"sqlite":    {mode: "compare", runs: 3, streaming: "off", sqlite: true},
		"tools":     {mode: "compare", runs: 3, streaming: "off", tools: 1},
		"streaming": {mode: "compare", runs: 3, streaming: "partial"},
		"runs":      {mode: "compare", runs: 0, streaming: "off"},
	} {
		if compareFlags(o) == nil {
			t.Errorf("compare with %s accepted", name)
		}
	}
	if err := compareFlags(options{mode: "burst", floor: true}); err != nil {
		t.Errorf("another mode refused: %v", err)
	}
}
