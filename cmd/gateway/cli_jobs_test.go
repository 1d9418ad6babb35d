package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
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
