package filestore_test

import (
	"context"
	"encoding/json"
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

var endedT0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

// endedTestJob is one-shot job id due at at.
func endedTestJob(id string, at time.Time) sessions.Job {
	return sessions.Job{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-100", ChatType: "group"},
		Text:   "reminder " + id, Schedule: sessions.JobSchedule{At: at},
		State: sessions.JobActive, NextAt: at, CreatedAt: at.Add(-time.Hour)}
}

// writeJobsJSON writes jobs.json in dir as the gateway writes it.
func writeJobsJSON(t testing.TB, dir string, js []sessions.Job) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "jobs": js})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jobs.json"), append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// endedJobs is n jobs that fired and ended (done) before at.
func endedJobs(n int, at time.Time) []sessions.Job {
	js := make([]sessions.Job, n)
	for i := range n {
		j := endedTestJob(fmt.Sprintf("jend%06d", i), at.Add(-time.Duration(n-i)*time.Minute))
		j.State, j.LastFiredAt, j.Fires = sessions.JobDone, j.NextAt, 1
		js[i] = j
	}
	return js
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// fire claims the due jobs at now and settles each done, until none is
// left due.
func fire(t testing.TB, s sessions.Jobs, now time.Time) []sessions.Job {
	t.Helper()
	ctx := context.Background()
	var all []sessions.Job
	for {
		js, _, err := s.ClaimDueJobs(ctx, now, "me", time.Minute, 10)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if len(js) == 0 {
			return all
		}
		for _, j := range js {
			if err := s.SettleJob(ctx, j.ID, "me", sessions.JobSettle{Fired: j.NextAt, State: sessions.JobDone, NextAt: j.NextAt}); err != nil {
				t.Fatalf("settle %s: %v", j.ID, err)
			}
		}
		all = append(all, js...)
	}
}

// TestFireRewritesOnlyLiveJobs: with 10,000 jobs that ended long ago, a
// fire (claim, settle) rewrites a jobs.json the size of the live jobs,
// not of every job that ever ended (issue 21: 41.9 MB a fire at 100,000).
func TestFireRewritesOnlyLiveJobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeJobsJSON(t, dir, endedJobs(10_000, endedT0)) // as a gateway that kept them there left it
	s := filestore.NewJobs(dir, 0)
	live := []sessions.Job{endedTestJob("jdue", endedT0), endedTestJob("jlater", endedT0.Add(time.Hour))}
	for _, j := range live {
		if err := s.AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(live)
	limit := 4*int64(len(b)) + 256
	jsonPath, endedPath := filepath.Join(dir, "jobs.json"), filepath.Join(dir, "jobs.ended.jsonl")
	endedBefore := fileSize(t, endedPath)
	js, _, err := s.ClaimDueJobs(ctx, endedT0, "me", time.Minute, 10)
	if err != nil || len(js) != 1 || js[0].ID != "jdue" {
		t.Fatalf("claim: %v, %v", js, err)
	}
	if got := fileSize(t, jsonPath); got > limit {
		t.Errorf("the claim wrote a jobs.json of %d bytes, want at most %d (the live jobs')", got, limit)
	}
	if err := s.SettleJob(ctx, "jdue", "me", sessions.JobSettle{Fired: endedT0, State: sessions.JobDone, NextAt: endedT0}); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, jsonPath); got > limit {
		t.Errorf("the settle wrote a jobs.json of %d bytes, want at most %d (the live jobs')", got, limit)
	}
	if grown := fileSize(t, endedPath) - endedBefore; grown <= 0 || grown > limit {
		t.Errorf("the ended jobs' file grew by %d bytes at the fire, want one job's line", grown)
	}
	all, err := filestore.NewJobs(dir, 0).ListJobs(ctx, sessions.JobFilter{})
	if err != nil || len(all) != 10_002 {
		t.Fatalf("listed %d jobs after a restart, %v; want 10,002", len(all), err)
	}
}

// TestEndedJobListedAfterMoveAndRestart: a job that ended leaves
// jobs.json and is still listed (--all), read and removable, before and
// after a restart.
func TestEndedJobListedAfterMoveAndRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := filestore.NewJobs(dir, 0)
	for _, j := range []sessions.Job{endedTestJob("jone", endedT0), endedTestJob("jtwo", endedT0.Add(time.Hour))} {
		if err := s.AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if got := fire(t, s, endedT0); len(got) != 1 {
		t.Fatalf("fired %d jobs", len(got))
	}
	raw, err := os.ReadFile(filepath.Join(dir, "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"jone"`) {
		t.Errorf("jobs.json still holds the ended job: %s", raw)
	}
	for name, h := range map[string]sessions.Jobs{"same handle": s, "restarted": filestore.NewJobs(dir, 0)} {
		all, err := h.ListJobs(ctx, sessions.JobFilter{})
		if err != nil || len(all) != 2 || all[0].ID != "jone" || all[0].State != sessions.JobDone || all[0].Fires != 1 {
			t.Errorf("%s: all jobs %+v, %v", name, all, err)
		}
		active, err := h.ListJobs(ctx, sessions.JobFilter{Active: true})
		if err != nil || len(active) != 1 || active[0].ID != "jtwo" {
			t.Errorf("%s: active jobs %+v, %v", name, active, err)
		}
		if j, err := h.Job(ctx, "jone"); err != nil || j.State != sessions.JobDone {
			t.Errorf("%s: Job of the ended job: %+v, %v", name, j, err)
		}
		if err := h.AddJob(ctx, endedTestJob("jone", endedT0)); err == nil {
			t.Errorf("%s: AddJob of the ended job's id succeeded", name)
		}
	}
	restarted := filestore.NewJobs(dir, 0)
	if err := restarted.RemoveJob(ctx, "jone"); err != nil {
		t.Fatalf("RemoveJob of the ended job: %v", err)
	}
	if _, err := filestore.NewJobs(dir, 0).Job(ctx, "jone"); err == nil {
		t.Error("the removed ended job is still there after a restart")
	}
	if _, err := s.Job(ctx, "jone"); err == nil {
		t.Error("the removed ended job is still there for the other handle")
	}
}

// TestCrashBetweenEndedAppendAndRewriteFiresOnce: a crash after a job's
// end was appended to the ended jobs' file but before jobs.json was
// rewritten leaves it live in jobs.json; it is ended (never fired again),
// listed once, and the next change takes it out of jobs.json.
func TestCrashBetweenEndedAppendAndRewriteFiresOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	claimed := endedTestJob("jcrash", endedT0)
	claimed.ClaimOwner, claimed.ClaimUntil = "dead", endedT0.Add(time.Minute)
	other := endedTestJob("jother", endedT0.Add(time.Hour))
	writeJobsJSON(t, dir, []sessions.Job{claimed, other})
	done := sessions.SettledJob(claimed, sessions.JobSettle{Fired: endedT0, State: sessions.JobDone, NextAt: endedT0})
	line, err := json.Marshal(map[string]any{"endedAt": endedT0.Add(time.Second), "job": done})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jobs.ended.jsonl"), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	s := filestore.NewJobs(dir, 0)
	after := endedT0.Add(2 * time.Minute) // the dead claim ran out
	js, next, err := s.ClaimDueJobs(ctx, after, "restarted", time.Minute, 10)
	if err != nil || len(js) != 0 {
		t.Fatalf("claim after the crash: %v, %v; want none (the job ended)", js, err)
	}
	if !next.Equal(other.NextAt) {
		t.Errorf("next due %v, want %v", next, other.NextAt)
	}
	if j, err := s.Job(ctx, "jcrash"); err != nil || j.State != sessions.JobDone {
		t.Errorf("Job: %+v, %v; want done", j, err)
	}
	all, err := s.ListJobs(ctx, sessions.JobFilter{})
	if err != nil || len(all) != 2 {
		t.Errorf("listed %d jobs, %v; want 2 (each once)", len(all), err)
	}
	if err := s.RemoveJob(ctx, "jother"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "jcrash") {
		t.Errorf("jobs.json still holds the ended job after a change: %s", raw)
	}
	if js := fire(t, filestore.NewJobs(dir, 0), after.Add(time.Hour)); len(js) != 0 {
		t.Errorf("fired %v after a restart", js)
	}
}

// TestCrashMidAppendKeepsJobLive: a crash in the middle of the append
// (the line cut short) leaves the job live in jobs.json, claimable once;
// its end is appended after the cut line, which is dropped.
func TestCrashMidAppendKeepsJobLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := endedTestJob("jtorn", endedT0)
	writeJobsJSON(t, dir, []sessions.Job{j})
	prev := endedTestJob("jprev", endedT0.Add(-time.Hour))
	prev.State = sessions.JobDone
	whole, _ := json.Marshal(map[string]any{"endedAt": endedT0.Add(-time.Hour), "job": prev})
	torn, _ := json.Marshal(map[string]any{"endedAt": endedT0, "job": j})
	endedPath := filepath.Join(dir, "jobs.ended.jsonl")
	if err := os.WriteFile(endedPath, append(append(whole, '\n'), torn[:len(torn)/2]...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := filestore.NewJobs(dir, 0)
	if js := fire(t, s, endedT0); len(js) != 1 || js[0].ID != "jtorn" {
		t.Fatalf("fired %v, want jtorn once", js)
	}
	if js := fire(t, s, endedT0.Add(time.Hour)); len(js) != 0 {
		t.Fatalf("fired %v again", js)
	}
	all, err := filestore.NewJobs(dir, 0).ListJobs(ctx, sessions.JobFilter{})
	if err != nil || len(all) != 2 || all[0].ID != "jprev" || all[1].ID != "jtorn" || all[1].State != sessions.JobDone {
		t.Fatalf("after a restart: %+v, %v", all, err)
	}
}

// TestReaddedAfterRemoveIsLive: an ended job removed and then added again
// under its id (a copy with --overwrite) is live, in the same process
// and after a restart; one forgotten by retention may be added again.
func TestReaddedAfterRemoveIsLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := filestore.NewJobs(dir, 0)
	if err := s.AddJob(ctx, endedTestJob("jre", endedT0)); err != nil {
		t.Fatal(err)
	}
	fire(t, s, endedT0)
	if err := s.RemoveJob(ctx, "jre"); err != nil {
		t.Fatal(err)
	}
	again := endedTestJob("jre", endedT0.Add(time.Hour))
	if err := s.AddJob(ctx, again); err != nil {
		t.Fatalf("AddJob after remove: %v", err)
	}
	for name, h := range map[string]sessions.Jobs{"same handle": s, "restarted": filestore.NewJobs(dir, 0)} {
		if j, err := h.Job(ctx, "jre"); err != nil || j.State != sessions.JobActive || !j.NextAt.Equal(again.NextAt) {
			t.Errorf("%s: %+v, %v; want the active job again", name, j, err)
		}
	}
	if js := fire(t, filestore.NewJobs(dir, 0), again.NextAt); len(js) != 1 {
		t.Errorf("the job added again fired %d times, want once", len(js))
	}
}

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
