package filestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
