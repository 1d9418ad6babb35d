package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestJobsAddListRemove: `gateway jobs add` schedules into a session's
// chat, `list` shows it (JSON and table), a malformed schedule exits 2
// naming what is wrong, `remove` deletes it and a second remove is a
// usage error.
func TestJobsAddListRemove(t *testing.T) {
	state := t.TempDir()
	keys := seed(t, state, time.Now(), []string{"hello"})
	cfg := writeConfig(t, state, "", "jobs: {timezone: Europe/Berlin}\n")
	key := keys[0].String()

	r := gw(t, cfg, "jobs", "add", "--session", key, "tomorrow", "25:00", "x").want(t, 2)
	if !strings.Contains(r.Stderr, "hour must be 0-23") {
		t.Errorf("malformed schedule: stderr %q", r.Stderr)
	}
	gw(t, cfg, "jobs", "add", "--session", "agent:main:web:direct:nobody", "in", "2", "hours", "x").want(t, 2)
	r = gw(t, cfg, "jobs", "add", "--session", key, "every", "weekday", "at", "08:30", "Post", "the", "rota").want(t, 0)
	if !strings.HasPrefix(r.Stdout, "added j") || !strings.Contains(r.Stdout, "08:30 CE") || !strings.Contains(r.Stdout, "web/default/peer-0") {
		t.Errorf("add printed %q", r.Stdout)
	}
	id := strings.TrimSuffix(strings.Fields(r.Stdout)[1], ":")

	var body struct{ Jobs []sessions.Job }
	if err := json.Unmarshal([]byte(gw(t, cfg, "jobs", "list", "--json").want(t, 0).Stdout), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Jobs) != 1 || body.Jobs[0].ID != id || body.Jobs[0].Schedule.Cron != "30 8 * * 1-5" ||
		body.Jobs[0].Schedule.TZ != "Europe/Berlin" || body.Jobs[0].Text != "Post the rota" || body.Jobs[0].SessionKey != key {
		t.Fatalf("jobs list --json: %+v", body.Jobs)
	}
	if out := gw(t, cfg, "jobs", "list").want(t, 0).Stdout; !strings.Contains(out, id) || !strings.Contains(out, "30 8 * * 1-5 Europe/Berlin") {
		t.Errorf("jobs list:\n%s", out)
	}
	gw(t, cfg, "jobs", "remove", id).want(t, 0)
	if r := gw(t, cfg, "jobs", "remove", id).want(t, 2); !strings.Contains(r.Stderr, "no job") {
		t.Errorf("second remove: %q", r.Stderr)
	}
	if out := gw(t, cfg, "jobs", "list").want(t, 0).Stdout; strings.TrimSpace(out) != "no jobs" {
		t.Errorf("jobs list after remove: %q", out)
	}
}

// TestJobsListFilters: `jobs list --agent/--session` take the ids as every
// other command does (any case; a key as `sessions show` takes it), so a
// job is found however its agent or key is spelled; a key that does not
// parse exits 2, and so does an agent id that names no agent, instead of
// "no jobs" with exit 0. `jobs add` into a key of no agent creates
// nothing for it.
func TestJobsListFilters(t *testing.T) {
	state := t.TempDir()
	keys := seed(t, state, time.Now(), []string{"hello"})
	cfg := writeConfig(t, state, "", "")
	key := keys[0].String()
	r := gw(t, cfg, "jobs", "add", "--session", key, "every", "day", "at", "09:00", "standup").want(t, 0)
	id := strings.TrimSuffix(strings.Fields(r.Stdout)[1], ":")

	for _, args := range [][]string{
		{"--agent", "main"}, {"--agent", "MAIN"},
		{"--session", key}, {"--session", strings.ToUpper(key[:10]) + key[10:]},
	} {
		if out := gw(t, cfg, append([]string{"jobs", "list"}, args...)...).want(t, 0).Stdout; !strings.Contains(out, id) {
			t.Errorf("jobs list %v:\n%s", args, out)
		}
	}
	for _, args := range [][]string{
		{"--agent", "mian"}, {"--agent", "a b"}, {"--session", "peer-0"}, {"--session", "main:web:direct:peer-0"},
	} {
		if r := gw(t, cfg, append([]string{"jobs", "list"}, args...)...); r.Code != 2 || r.Stderr == "" {
			t.Errorf("jobs list %v: exit %d, stdout %q, stderr %q; want 2 and a message", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = gw(t, cfg, "jobs", "add", "--session", "agent:mian:web:direct:peer-0", "in", "2", "hours", "x").want(t, 2)
	if !strings.Contains(r.Stderr, "no such agent") {
		t.Errorf("jobs add into a typo'd agent: %q", r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "agents", "mian")); err == nil {
		t.Errorf("jobs add into a typo'd agent left its store directory behind")
	}
}

// TestJobsListAllShowsEndedJobs: a job that fired for the last time
// (moved out of jobs.json into the ended jobs' file) is listed by `jobs
// list --all` with its state, not by `jobs list`, and `jobs remove`
// forgets it, as when jobs.json kept it.
func TestJobsListAllShowsEndedJobs(t *testing.T) {
	state := t.TempDir()
	keys := seed(t, state, time.Now(), []string{"hello"})
	cfg := writeConfig(t, state, "", "")
	r := gw(t, cfg, "jobs", "add", "--session", keys[0].String(), "in", "2", "hours", "Call", "Ann").want(t, 0)
	id := strings.TrimSuffix(strings.Fields(r.Stdout)[1], ":")
	store := filestore.NewJobs(filepath.Join(state, "jobs"), 0)
	due := time.Now().Add(3 * time.Hour)
	ctx := context.Background()
	if js, _, err := store.ClaimDueJobs(ctx, due, "test", time.Minute, 10); err != nil || len(js) != 1 {
		t.Fatalf("claim: %v, %v", js, err)
	}
	if err := store.SettleJob(ctx, id, "test", sessions.JobSettle{Fired: due, State: sessions.JobDone, NextAt: due}); err != nil {
		t.Fatal(err)
	}
	all := listAllJobs(t, cfg)
	if j, ok := all[id]; !ok || len(all) != 1 || j.State != sessions.JobDone || j.Fires != 1 || j.Text != "Call Ann" {
		t.Fatalf("jobs list --all: %+v", all)
	}
	if out := gw(t, cfg, "jobs", "list", "--all").want(t, 0).Stdout; !strings.Contains(out, id) || !strings.Contains(out, "done") {
		t.Errorf("jobs list --all:\n%s", out)
	}
	if out := gw(t, cfg, "jobs", "list").want(t, 0).Stdout; strings.TrimSpace(out) != "no jobs" {
		t.Errorf("jobs list shows the ended job:\n%s", out)
	}
	gw(t, cfg, "jobs", "remove", id).want(t, 0)
	if all := listAllJobs(t, cfg); len(all) != 0 {
		t.Errorf("jobs list --all after remove: %+v", all)
	}
}
