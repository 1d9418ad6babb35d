package filestore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// openJobsManager opens a files backend on dir with the clock *now.
func openJobsManager(t *testing.T, dir string, now *time.Time, maint sessions.Maintenance) *filestore.Manager {
	t.Helper()
	m, err := filestore.Open(filestore.Options{StateDir: dir, Logger: zaptest.NewLogger(t), Passive: true,
		Now: func() time.Time { return *now }, Maintenance: maint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestRetentionForgetsOldEndedJobs: maintenance forgets the jobs that
// ended more than archiveRetention ago (30 days by default), keeps the
// others, and rewrites the ended jobs' file only once at least half of it
// is forgotten. In warn mode it forgets none.
func TestRetentionForgetsOldEndedJobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := endedT0
	m := openJobsManager(t, dir, &now, sessions.Maintenance{})
	s := m.Backend().Jobs()
	endAt := func(at time.Time, ids ...string) {
		now = at
		for _, id := range ids {
			if err := s.AddJob(ctx, endedTestJob(id, at)); err != nil {
				t.Fatal(err)
			}
		}
		fire(t, s, at)
	}
	var old, recent []string
	for i := range 10 {
		old = append(old, fmt.Sprintf("jold%02d", i))
	}
	for i := range 30 {
		recent = append(recent, fmt.Sprintf("jnew%02d", i))
	}
	endAt(endedT0, old...)
	endAt(endedT0.Add(20*24*time.Hour), recent...)
	endedPath := filepath.Join(dir, "jobs", "jobs.ended.jsonl")
	listed := func() int {
		t.Helper()
		js, err := s.ListJobs(ctx, sessions.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(js)
	}

	warn := openJobsManager(t, dir, &now, sessions.Maintenance{Mode: sessions.MaintenanceWarn})
	now = endedT0.Add(31 * 24 * time.Hour)
	if _, err := warn.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := listed(); n != 40 {
		t.Errorf("after maintenance in warn mode: %d jobs listed, want 40", n)
	}

	size := fileSize(t, endedPath)
	if _, err := m.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := listed(); n != 30 {
		t.Errorf("31 days after the first ended: %d jobs listed, want 30", n)
	}
	if _, err := filestore.NewJobs(filepath.Join(dir, "jobs"), 0).Job(ctx, "jold00"); err == nil {
		t.Error("a job past its retention is still there after a restart")
	}
	if grown := fileSize(t, endedPath) - size; grown < 0 || grown > 200 {
		t.Errorf("forgetting a quarter of the file changed it by %d bytes, want one short line appended", grown)
	}
	if _, err := m.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	now = endedT0.Add(51 * 24 * time.Hour)
	if _, err := m.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := listed(); n != 0 {
		t.Errorf("51 days on: %d jobs listed, want 0", n)
	}
	if got := fileSize(t, endedPath); got != 0 {
		t.Errorf("the ended jobs' file holds %d bytes once every job in it is forgotten, want it rewritten empty", got)
	}
	if err := s.AddJob(ctx, endedTestJob("jold00", now)); err != nil {
		t.Errorf("AddJob of a forgotten job's id: %v", err)
	}
}

// TestForgetWithClockAheadSparesLaterJobs: maintenance run while the
// clock was a year ahead forgets what ended before that clock's cutoff;
// jobs that end once the clock is set right are listed, not forgotten at
// once by that cutoff (it covers the jobs that had ended when it ran).
func TestForgetWithClockAheadSparesLaterJobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := endedT0
	m := openJobsManager(t, dir, &now, sessions.Maintenance{})
	s := m.Backend().Jobs()
	endAt := func(at time.Time, ids ...string) {
		now = at
		for _, id := range ids {
			if err := s.AddJob(ctx, endedTestJob(id, at)); err != nil {
				t.Fatal(err)
			}
		}
		fire(t, s, at)
	}
	endAt(endedT0, "jreal")
	ahead := endedT0.Add(365 * 24 * time.Hour)
	var aheadIDs []string
	for i := range 10 {
		aheadIDs = append(aheadIDs, fmt.Sprintf("jahead%02d", i))
	}
	endAt(ahead, aheadIDs...)
	if _, err := m.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	endAt(endedT0.Add(time.Hour), "jlater") // the clock set right
	for name, h := range map[string]sessions.Jobs{"same handle": s, "restarted": filestore.NewJobs(filepath.Join(dir, "jobs"), 0)} {
		if j, err := h.Job(ctx, "jlater"); err != nil || j.State != sessions.JobDone {
			t.Errorf("%s: the job ended after the clock was set right: %+v, %v", name, j, err)
		}
		if _, err := h.Job(ctx, "jreal"); err == nil {
			t.Errorf("%s: the job the maintenance forgot is back", name)
		}
		if js, err := h.ListJobs(ctx, sessions.JobFilter{}); err != nil || len(js) != 11 {
			t.Errorf("%s: %d jobs listed, %v; want 11", name, len(js), err)
		}
	}
}

// TestSnapshotKeepsJobEndingDuringCopy: a job that ends while a backup's
// snapshot copies the jobs is in the copy (ended), never in neither file:
// jobs.json is copied before the ended jobs' file it moves jobs to.
func TestSnapshotKeepsJobEndingDuringCopy(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	dir := filepath.Join(state, "jobs")
	s := filestore.NewJobs(dir, 0)
	for _, j := range []sessions.Job{endedTestJob("jbefore", endedT0), endedTestJob("jduring", endedT0.Add(time.Hour))} {
		if err := s.AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	fire(t, s, endedT0) // jbefore ended: both files exist
	copyDir := t.TempDir()
	ended := false
	_, err := filestore.Snapshot(ctx, state, 0, func(f filestore.SnapshotFile) error {
		b := make([]byte, f.Size)
		if _, err := io.ReadFull(f.Body, b); err != nil {
			return err
		}
		if !ended && strings.HasPrefix(f.Path, "jobs/") {
			ended = true
			if got := fire(t, filestore.NewJobs(dir, 0), endedT0.Add(time.Hour)); len(got) != 1 {
				t.Fatalf("fired %d jobs during the copy", len(got))
			}
		}
		path := filepath.Join(copyDir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	restored := filestore.NewJobs(filepath.Join(copyDir, "jobs"), 0)
	for _, id := range []string{"jbefore", "jduring"} {
		if j, err := restored.Job(ctx, id); err != nil {
			t.Errorf("%s is not in the copy: %v", id, err)
		} else if j.State == sessions.JobActive && id == "jbefore" {
			t.Errorf("%s is active again in the copy", id)
		}
	}
	if js, _, err := restored.ClaimDueJobs(ctx, endedT0.Add(2*time.Hour), "me", time.Minute, 10); err != nil || len(js) > 1 {
		t.Errorf("the copy fires %v, %v", js, err)
	}
}
