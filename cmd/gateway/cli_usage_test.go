package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/usagereport"
)

// recordUsage writes rows to the files ledger of stateDir.
func recordUsage(t *testing.T, stateDir string, rows ...sessions.UsageRow) {
	t.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	if err := mgr.Backend().Usage().Record(context.Background(), rows...); err != nil {
		t.Fatal(err)
	}
}

func TestUsageReport(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t, state, "", "")
	recordUsage(t, state, sessionstest.UsageFixture()...)

	var rep usagereport.Report
	r := gw(t, cfg, "usage", "--by", "model", "--since", "2026-11-01", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, r.Stdout)
	}
	// Since 1 Nov: gpt-big 29475 + 30000 µ$, gpt-small 45 µ$ (sessionstest.UsageFixture).
	if rep.By != "model" || len(rep.Buckets) != 2 || rep.Buckets[0].Key != "openai/gpt-big" || rep.Buckets[0].Turns != 2 ||
		math.Abs(rep.Buckets[0].Cost-0.059475) > 1e-9 || math.Abs(rep.Total.Cost-0.05952) > 1e-9 || rep.Total.Turns != 3 {
		t.Errorf("usage --by model --since 2026-11-01: %+v", rep)
	}

	r = gw(t, cfg, "usage", "--by", "sender", "--agent", "main").want(t, 0)
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "SENDER") || !strings.Contains(lines[0], "COST USD") ||
		!strings.Contains(lines[1], "telegram:300") || !strings.Contains(lines[1], "0.0295") ||
		!strings.Contains(lines[2], "telegram:100") || !strings.Contains(lines[2], "Ann") ||
		!strings.HasPrefix(strings.TrimSpace(lines[3]), "TOTAL") || !strings.Contains(lines[3], "0.0362") {
		t.Errorf("usage --by sender --agent main:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "usage").want(t, 0)
	if lines := strings.Split(strings.TrimSpace(r.Stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "17100") ||
		!strings.Contains(lines[1], "0.0662") {
		t.Errorf("usage (total):\n%s", r.Stdout)
	}

	for _, args := range [][]string{
		{"usage", "--by", "week"},
		{"usage", "--since", "7x"},
		{"usage", "--since", "last tuesday"},
		{"usage", "--agent", "../etc"},
		{"usage", "extra"},
		{"usage", "rebuild", "--agent", "a b"},
	} {
		r := gw(t, cfg, args...)
		if r.Code != 2 || r.Stderr == "" {
			t.Errorf("gateway %v: exit %d, stderr %q; want 2 and a message", args, r.Code, r.Stderr)
		}
	}
	if r := gw(t, cfg, "usage", "--since", "7x"); !strings.Contains(r.Stderr, "7d, 12h, 2w") {
		t.Errorf("--since error does not name the accepted forms: %q", r.Stderr)
	}
}

// TestUsageRebuildFromTranscripts: turns written before the ledger are
// added by `gateway usage rebuild`, priced from the config when the
// transcript has no cost; a second run adds nothing.
func TestUsageRebuildFromTranscripts(t *testing.T) {
	state := t.TempDir()
	cfg := writeConfig(t, state, "", `providers:
  openai: {type: openai, baseURL: "http://127.0.0.1:1/v1", apiKey: test, models: {gpt-x: {price: {input: 2, output: 8}}}}
`)
	mgr, err := filestore.Open(filestore.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, "5")
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "5", From: "5", Name: "Eve", At: at})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	reply := sessions.Message{Role: sessions.RoleAssistant, Provider: "openai", Model: "gpt-x", Timestamp: at.UnixMilli(),
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "hello"}}, Usage: &sessions.Usage{Input: 1000, Output: 500}}
	if _, err := tr.Append(ctx, sessions.UserText("hi", at), reply); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
	r := gw(t, cfg, "usage", "rebuild").want(t, 0)
	if !strings.Contains(r.Stdout, "added 1 rows (1 priced") {
		t.Errorf("rebuild: %q", r.Stdout)
	}
	if r := gw(t, cfg, "usage", "rebuild").want(t, 0); !strings.Contains(r.Stdout, "added 0 rows") {
		t.Errorf("second rebuild: %q", r.Stdout)
	}
	var rep usagereport.Report
	r = gw(t, cfg, "usage", "--by", "sender", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// 1000 × 2 + 500 × 8 per million = 0.006 USD.
	if len(rep.Buckets) != 1 || rep.Buckets[0].Key != "telegram:5" || rep.Buckets[0].Label != "Eve" ||
		math.Abs(rep.Total.Cost-0.006) > 1e-12 || rep.Total.Input != 1000 {
		t.Errorf("after rebuild: %+v", rep)
	}
}

// TestStorageMigrateUsageLedger: `gateway storage migrate` carries the
// usage ledger to PostgreSQL and back (reports equal, a second run copies
// nothing).
func TestStorageMigrateUsageLedger(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	recordUsage(t, stateDir, sessionstest.UsageFixture()...)
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, stateDir, "", "")
	r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "usage ledger        5 rows copied") {
		t.Fatalf("files -> postgres:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "usage ledger        0 rows copied") {
		t.Fatalf("second run:\n%s", r.Stdout)
	}
	backDir := filepath.Join(t.TempDir(), "back")
	r = gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "files", "--postgres-url", url, "--state-dir", backDir).want(t, 0)
	if !strings.Contains(r.Stdout, "usage ledger        5 rows copied") {
		t.Fatalf("postgres -> files:\n%s", r.Stdout)
	}
	backCfg := writeConfig(t, backDir, "", "")
	for _, by := range []string{"sender", "day", "session"} {
		a := gw(t, cfg, "usage", "--by", by, "--json").want(t, 0)
		b := gw(t, backCfg, "usage", "--by", by, "--json").want(t, 0)
		if a.Stdout != b.Stdout {
			t.Errorf("usage --by %s differs after the round trip:\n%s\n---\n%s", by, a.Stdout, b.Stdout)
		}
	}
}
