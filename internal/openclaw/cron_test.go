package openclaw_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/internal/openclaw"
	"github.com/gateway/gateway/internal/openclaw/openclawtest"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// jobOptions is the configuration the fixture's jobs expect: Telegram's
// default account served, jobs.timezone openclawtest.TZ, dmScope scope.
func jobOptions(t *testing.T, now time.Time, scope routing.DMScope) openclaw.JobOptions {
	loc, err := time.LoadLocation(openclawtest.TZ)
	if err != nil {
		t.Fatal(err)
	}
	return openclaw.JobOptions{Now: now, Zone: func(string) *time.Location { return loc },
		Routing: routing.Config{DMScope: scope},
		Serves:  func(channel, account string) bool { return channel == "telegram" && account == "default" }}
}

// room names a job's room as openclawtest.JobWant does.
func room(j sessions.Job) string {
	r := j.Target.ChatKey()
	if j.Target.ThreadID != "" {
		r += ":" + j.Target.ThreadID
	}
	return r
}

// TestImportCronJobs: the fixture's user cron jobs (a cron with its time
// zone announcing to a forum topic, an interval into the main session, a
// one-shot to a DM, a system event set in a topic without a time zone)
// come over as gateway jobs on the session the gateway's routing gives
// their room, with their text and schedule and a first occurrence after
// now; the managed, disabled, silent, Discord and past ones are skipped
// with their reasons. Applied into the files backend's job store they are
// there as mapped; a second apply adds nothing.
func TestImportCronJobs(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := read(t, dir)
	openclaw.MapJobs(p, jobOptions(t, now, ""))

	mgr, err := filestore.Open(filestore.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	store := mgr.Backend().Jobs()
	target := openclaw.Target{Sessions: mgr.Transfer(), Pairing: mgr.Backend().Pairing(), Jobs: store}
	ctx := context.Background()
	res, err := openclaw.Apply(ctx, p, target, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 9 || res.JobsImported != 4 || res.JobsSkipped != 5 || res.JobsPresent != 0 {
		t.Fatalf("result %+v, want 9 jobs: 4 imported, 5 skipped", res)
	}
	rep := map[string]int{}
	for _, u := range p.Report.List() {
		rep[u.Field] = u.Count
	}
	for _, it := range p.Jobs {
		want, ok := openclawtest.Jobs[it.SourceID]
		if !ok {
			t.Fatalf("unknown job %s", it.SourceID)
		}
		if want.Skip != "" {
			if it.Job != nil || it.Status != openclaw.StatusSkipped || it.Why == "" || rep[want.Skip] != 1 {
				t.Errorf("%s: status %s job %+v why %q, report %v; want skipped as %s", it.SourceID, it.Status, it.Job, it.Why, rep, want.Skip)
			}
			continue
		}
		if it.Status != openclaw.StatusImport || it.Job == nil {
			t.Errorf("%s: status %s (%s), want imported", it.SourceID, it.Status, it.Why)
			continue
		}
		j, err := store.Job(ctx, openclaw.JobID(it.SourceID))
		if err != nil {
			t.Errorf("%s: not in the store: %v", it.SourceID, err)
			continue
		}
		if j.AgentID != want.Agent || j.SessionKey != want.Key || room(j) != want.Room || j.Text != want.Text ||
			j.Schedule.Cron != want.Cron || j.Schedule.TZ != want.TZ || !j.Schedule.At.Equal(want.At) || j.State != sessions.JobActive {
			t.Errorf("%s: stored %+v\nwant %+v", it.SourceID, j, want)
		}
		if !j.NextAt.After(now) {
			t.Errorf("%s: next %s is not after now %s", it.SourceID, j.NextAt, now)
		}
		if want.Cron != "" && !strings.HasPrefix(want.Cron, "@") {
			if n, _ := jobs.Next(j.Schedule, now); !n.Equal(j.NextAt) {
				t.Errorf("%s: next %s, the scheduler's next from now %s", it.SourceID, j.NextAt, n)
			}
		}
	}
	if rep["cron_jobs.schedule.noTimeZone"] != 1 { // report (digest has none either, but is skipped)
		t.Errorf("report %v: want 1 imported cron expression without a time zone", rep)
	}
	// water: every 2h anchored at the fixture's base (10:00 UTC): 12:00 is
	// an occurrence, so the next is 14:00.
	if j, _ := store.Job(ctx, openclaw.JobID("water")); !j.NextAt.Equal(time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("water: next %s, want 14:00 UTC (OpenClaw's anchor plus whole intervals)", j.NextAt)
	}
	// standup: weekdays 09:00 Berlin: Tuesday 1 December 08:00 UTC.
	if j, _ := store.Job(ctx, openclaw.JobID("standup")); !j.NextAt.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("standup: next %s, want 2026-12-01 08:00 UTC", j.NextAt)
	}

	again := read(t, dir)
	openclaw.MapJobs(again, jobOptions(t, now.Add(time.Hour), ""))
	res, err = openclaw.Apply(ctx, again, target, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.JobsImported != 0 || res.JobsPresent != 4 {
		t.Fatalf("second apply %+v, want 0 imported, 4 present", res)
	}
	all, err := store.ListJobs(ctx, sessions.JobFilter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("store holds %d jobs (%v), want 4", len(all), err)
	}
}

// TestImportCronJobsRouting: a DM room gets the session the gateway's
// dmScope gives it (main: the agent's main session), and a room of an
// account the config does not serve is skipped, for a later import.
func TestImportCronJobsRouting(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := read(t, dir)
	openclaw.MapJobs(p, jobOptions(t, now, routing.ScopeMain))
	for _, it := range p.Jobs {
		if it.SourceID == "dentist" && (it.Job == nil || it.Job.SessionKey != "agent:main:main" || it.Job.Target.ChatID != "555") {
			t.Errorf("dentist under dmScope main: %+v (%s), want agent:main:main, chat 555", it.Job, it.Why)
		}
	}

	p = read(t, dir)
	o := jobOptions(t, now, "")
	o.Serves = func(string, string) bool { return false }
	openclaw.MapJobs(p, o)
	n := 0
	for _, it := range p.Jobs {
		if it.Job != nil {
			t.Errorf("%s mapped with no account served", it.SourceID)
		}
		if strings.Contains(it.Why, "telegram/default") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d jobs skipped naming telegram/default, want the 4 mappable ones", n)
	}
}

// TestImportCronJobShapes: the shapes beyond the fixture's: a six-field
// cron with seconds 0 maps as its five fields; a recurring job deleted
// after its first run maps as a one-shot at its next occurrence; the
// legacy agentTurn delivery fields map; an interval under a minute, a
// webhook, a @username target, a cron expression robfig/cron does not
// read, a command payload and a job for a session that was not imported
// are skipped, each under its own field.
func TestImportCronJobShapes(t *testing.T) {
	dir := openclawtest.Build(t, filepath.Join(t.TempDir(), "oc"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tg := map[string]any{"mode": "announce", "channel": "telegram", "to": "-1001"}
	add := func(id string, sched, payload, extra map[string]any) {
		j := map[string]any{"id": id, "agentId": "main", "name": id, "enabled": true, "schedule": sched,
			"sessionTarget": "isolated", "payload": payload, "delivery": tg}
		for k, v := range extra {
			j[k] = v
		}
		openclawtest.AddCronJob(t, dir, j)
	}
	turn := map[string]any{"kind": "agentTurn", "message": "hello"}
	daily := map[string]any{"kind": "cron", "expr": "0 0 9 * * *", "tz": "UTC"}
	add("seconds", daily, turn, nil)
	add("once", daily, turn, map[string]any{"deleteAfterRun": true})
	add("legacy", daily, map[string]any{"kind": "agentTurn", "message": "hello", "deliver": true, "channel": "telegram", "to": "555"},
		map[string]any{"delivery": nil})
	add("fast", map[string]any{"kind": "every", "everyMs": 30000}, turn, nil)
	add("hook", daily, turn, map[string]any{"delivery": map[string]any{"mode": "webhook", "to": "https://example.com/h"}})
	add("byname", daily, turn, map[string]any{"delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "@somechannel"}})
	add("quartz", map[string]any{"kind": "cron", "expr": "0 9 L * *", "tz": "UTC"}, turn, nil)
	add("script", daily, map[string]any{"kind": "command", "command": "ls"}, nil)
	add("elsewhere", daily, map[string]any{"kind": "systemEvent", "text": "hi"},
		map[string]any{"sessionTarget": "main", "delivery": nil, "sessionKey": "agent:main:telegram:group:-42"})

	p := read(t, dir)
	openclaw.MapJobs(p, jobOptions(t, now, ""))
	want := map[string]string{"fast": "schedule.every", "hook": "delivery=webhook", "byname": "telegram.notAnID",
		"quartz": "schedule.cron", "script": "payload=command", "elsewhere": "session.absent"}
	rep := map[string]int{}
	for _, u := range p.Report.List() {
		rep[u.Field] = u.Count
	}
	for _, it := range p.Jobs {
		if _, fixture := openclawtest.Jobs[it.SourceID]; fixture {
			continue
		}
		if field, skipped := want[it.SourceID]; skipped {
			if it.Job != nil || rep["cron_jobs."+field] != 1 {
				t.Errorf("%s: %+v, report %v; want skipped as %s", it.SourceID, it.Job, rep, field)
			}
			continue
		}
		j := it.Job
		if j == nil {
			t.Errorf("%s skipped: %s", it.SourceID, it.Why)
			continue
		}
		switch it.SourceID {
		case "seconds":
			if j.Schedule.Cron != "0 9 * * *" || j.SessionKey != "agent:main:telegram:group:-1001" {
				t.Errorf("seconds: %+v", j)
			}
		case "once":
			if !j.Schedule.At.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) || j.Schedule.Recurring() {
				t.Errorf("once: schedule %+v, want a one-shot at the next 09:00 UTC", j.Schedule)
			}
		case "legacy":
			if j.SessionKey != "agent:main:telegram:direct:555" || j.Target.ChatID != "555" {
				t.Errorf("legacy: %+v", j)
			}
		}
	}
}
