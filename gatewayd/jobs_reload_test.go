package gatewayd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/configs"
)

// TestHotReloadJobsSettings: jobs.grace, jobs.poll and jobs.maxPerRoom
// edited in the file of a running daemon reach the running scheduler and
// the next job added (read at each add: /remind, the schedule tool and
// the API share d.maxJobsPerRoom), without a restart.
func TestHotReloadJobsSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte(reloadYAML(state, "jobs: {maxPerRoom: 1, grace: 10m, poll: 1s}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := startDaemonFromFile(t, path, &fakeClock{})
	s := d.sched.Load()
	if s == nil {
		t.Fatal("no scheduler running")
	}
	if err := os.WriteFile(path, []byte(reloadYAML(state, "jobs: {maxPerRoom: 3, grace: 1m, poll: 5s}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.maxJobsPerRoom() != 3 || s.GraceWindow() != time.Minute || s.PollInterval() != 5*time.Second {
		if time.Now().After(deadline) {
			t.Fatalf("after the reload: maxPerRoom %d grace %s poll %s, want 3, 1m, 5s",
				d.maxJobsPerRoom(), s.GraceWindow(), s.PollInterval())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReloadJobsKeys: jobs.grace, jobs.poll and jobs.maxPerRoom apply on
// reload; jobs.enabled and jobs.lease are named as needing a restart.
func TestReloadJobsKeys(t *testing.T) {
	load := func(y string) *configs.Config { return loadYAML(t, y) }
	base := load("jobs: {grace: 10m, poll: 1s, maxPerRoom: 5}\n")
	if got := restartOnly(base, load("jobs: {grace: 1m, poll: 5s, maxPerRoom: 9}\n")); len(got) != 0 {
		t.Errorf("grace/poll/maxPerRoom reported as needing a restart: %v", got)
	}
	got := restartOnly(base, load("jobs: {enabled: false, lease: 2m}\n"))
	for _, w := range []string{"jobs.enabled", "jobs.lease"} {
		if !slices.Contains(got, w) {
			t.Errorf("restartOnly = %v, missing %q", got, w)
		}
	}
}
