package gatewayd

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertMetricsExistAtStart: every metric the alert rules in
// deploy/README.md use exists on a fresh daemon's /metrics before any
// event, with the labels the rule selects (a counter that appears only at
// its first event leaves rate() and increase() alerts silent). The names
// are read from the document, so the test follows it.
func TestAlertMetricsExistAtStart(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sels := alertSelectors(t, string(doc))
	if len(sels) < 5 {
		t.Fatalf("found %d metric selectors in the alert rules of deploy/README.md: %v", len(sels), sels)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(reloadYAML(filepath.Join(dir, "state"), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startFromFile(t, path, &fakeClock{})
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	samples := strings.Split(string(body), "\n")
	for _, s := range sels {
		if !hasSample(samples, s) {
			t.Errorf("alert rule metric %s%s is not on a fresh daemon's /metrics", s.name, s.labels)
		}
	}
}

type selector struct {
	name   string
	labels string // as written: {k="v",...} or ""
}

// alertSelectors reads the metric selectors of the `expr:` lines of the
// document's rule file (gateway_* and process_* series).
func alertSelectors(t *testing.T, doc string) []selector {
	t.Helper()
	exprRe := regexp.MustCompile(`(?m)^\s*expr:\s*(.*)$`)
	selRe := regexp.MustCompile(`\b((?:gateway|process)_[a-z0-9_]+)(\{[^}]*\})?`)
	var out []selector
	for _, e := range exprRe.FindAllStringSubmatch(doc, -1) {
		for _, m := range selRe.FindAllStringSubmatch(e[1], -1) {
			out = append(out, selector{name: m[1], labels: m[2]})
		}
	}
	return out
}

// hasSample reports whether a sample line of the exposition has the
// selector's name and every label matcher it writes (k="v").
func hasSample(lines []string, s selector) bool {
	matchers := regexp.MustCompile(`([a-z_]+)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(s.labels, -1)
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, s.name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		all := true
		for _, m := range matchers {
			all = all && strings.Contains(rest, m[1]+`="`+m[2]+`"`)
		}
		if all {
			return true
		}
	}
	return false
}
