package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestStorageMigrateJobs: `gateway storage migrate` carries the scheduled
// jobs files -> postgres -> files with their schedule, next occurrence
// and state; a second run copies nothing.
func TestStorageMigrateJobs(t *testing.T) {
	state := t.TempDir()
	keys := seed(t, state, time.Now(), []string{"hello"})
	url := pgtest.NewDatabase(t)
	cfg := writeConfig(t, state, "", "jobs: {timezone: Europe/Berlin}\n")
	key := keys[0].String()
	gw(t, cfg, "jobs", "add", "--session", key, "every", "weekday", "at", "08:30", "Post", "the", "rota").want(t, 0)
	gw(t, cfg, "jobs", "add", "--session", key, "in", "2", "hours", "Call", "Ann").want(t, 0)
	before := listAllJobs(t, cfg)
	if len(before) != 2 {
		t.Fatalf("jobs before the migration: %+v", before)
	}

	r := gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "scheduled jobs      2 copied") {
		t.Fatalf("files -> postgres:\n%s", r.Stdout)
	}
	r = gw(t, cfg, "storage", "migrate", "--from", "files", "--to", "postgres", "--postgres-url", url).want(t, 0)
	if !strings.Contains(r.Stdout, "scheduled jobs      0 copied") {
		t.Fatalf("second run:\n%s", r.Stdout)
	}
	backDir := filepath.Join(t.TempDir(), "back")
	gw(t, cfg, "storage", "migrate", "--from", "postgres", "--to", "files", "--postgres-url", url, "--state-dir", backDir).want(t, 0)
	after := listAllJobs(t, writeConfig(t, backDir, "", "jobs: {timezone: Europe/Berlin}\n"))
	if len(after) != len(before) {
		t.Fatalf("jobs after the round trip: %+v, want %+v", after, before)
	}
	for id, b := range before {
		a, ok := after[id]
		if !ok || a.Text != b.Text || a.SessionKey != b.SessionKey || a.Schedule.Cron != b.Schedule.Cron ||
			a.Schedule.TZ != b.Schedule.TZ || !a.Schedule.At.Equal(b.Schedule.At) || !a.NextAt.Truncate(time.Microsecond).Equal(b.NextAt.Truncate(time.Microsecond)) || // PostgreSQL keeps µs
			a.State != b.State || a.Target != b.Target {
			t.Errorf("job %s after the round trip: %+v, want %+v", id, a, b)
		}
	}
}

// listAllJobs is `gateway jobs list --all --json` by id.
func listAllJobs(t *testing.T, cfg string) map[string]sessions.Job {
	t.Helper()
	var body struct{ Jobs []sessions.Job }
	if err := json.Unmarshal([]byte(gw(t, cfg, "jobs", "list", "--all", "--json").want(t, 0).Stdout), &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]sessions.Job{}
	for _, j := range body.Jobs {
		out[j.ID] = j
	}
	return out
}
