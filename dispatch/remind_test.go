package dispatch

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// groupMsg is a message of sender in group -100 of channel tg.
func remindMsg(sender, text string) channels.Inbound {
	m := in("tg", "-100", text)
	m.ChatType, m.SenderID, m.SenderName = channels.Group, sender, "u"+sender
	return m
}

// withRoomMembers lets everyone talk and privileges sender "1" only.
func withRoomMembers(h *harness) {
	rt := *h.d.Runtime()
	rt.Access = func(in channels.Inbound) Verdict { return Verdict{Allow: true, Privileged: in.SenderID == "1"} }
	h.d.SetRuntime(&rt)
}

var jobIDRe = regexp.MustCompile(`\bj[0-9a-f]{8}\b`)

// TestRemindSetListCancel: any member sets a reminder; only privileged
// members list and cancel them; a bad time is answered with what is wrong.
func TestRemindSetListCancel(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	h.handle(remindMsg("2", "/remind in 2 hours stand-up"))
	h.drained()
	texts := h.tg.texts()
	if len(texts) != 1 || !strings.HasPrefix(texts[0], "Reminder j") {
		t.Fatalf("/remind answered %q", texts)
	}
	id := jobIDRe.FindString(texts[0])
	js, err := h.mgr.Backend().Jobs().ListJobs(context.Background(), sessions.JobFilter{})
	if err != nil || len(js) != 1 || js[0].ID != id || js[0].Text != "stand-up" || js[0].Target.SenderID != "2" ||
		js[0].SessionKey != "agent:main:tg:group:-100" {
		t.Fatalf("stored jobs %+v, %v", js, err)
	}
	if err := h.d.Handle(h.ctx, remindMsg("2", "/remind list")); !errors.Is(err, channels.ErrRejected) {
		t.Errorf("/remind list by a member who is not privileged: %v, want refused", err)
	}
	h.handle(remindMsg("1", "/remind list"))
	h.handle(remindMsg("1", "/remind tomorrow 25:00 x"))
	h.handle(remindMsg("1", "/remind cancel "+id))
	h.handle(remindMsg("1", "/remind cancel "+id))
	h.drained()
	texts = h.tg.texts()[1:]
	want := []string{"Only allowed members can use /remind here.", "Reminders in this chat:\n" + id,
		"Cannot set the reminder: tomorrow: \"25:00\": hour must be 0-23", "Cancelled " + id + ".", "No reminder \"" + id + "\""}
	if len(texts) != len(want) {
		t.Fatalf("answers %q, want %d", texts, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(texts[i], w) {
			t.Errorf("answer %d = %q, want it to start %q", i, texts[i], w)
		}
	}
}

// TestDeliverJobRunsOneTurn: an occurrence becomes one turn of the job's
// session, framed as a scheduled job; the same occurrence delivered again
// (a scheduler that died before settling) is dropped.
func TestDeliverJobRunsOneTurn(t *testing.T) {
	h := newHarness(t, "", nil)
	now := time.Now()
	j, err := jobs.NewJob(jobs.Spec{AgentID: "main", SessionKey: "agent:main:tg:group:-100", Text: "water the plants",
		Schedule: sessions.JobSchedule{At: now.Add(time.Hour)},
		Target:   sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: "2", SenderName: "Ann"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := jobs.OccurrenceID(j.ID, j.NextAt)
	for range 2 {
		if err := h.d.DeliverJob(h.ctx, j, j.NextAt, id); err != nil {
			t.Fatalf("DeliverJob: %v", err)
		}
	}
	h.drained()
	texts := h.tg.texts()
	wantPrefix := "re: [Ann] [Scheduled reminder " + j.ID + " set by Ann, due "
	if len(texts) != 1 || !strings.HasPrefix(texts[0], wantPrefix) || !strings.HasSuffix(texts[0], "] water the plants") {
		t.Fatalf("replies %q, want one starting %q", texts, wantPrefix)
	}
	if out := h.tg.sent()[0].Out; out.ChatID != "-100" || out.Channel != "tg" {
		t.Errorf("reply went to %s/%s", out.Channel, out.ChatID)
	}
	if n := len(h.m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	gone := j
	gone.Target.AccountID = "removed"
	if err := h.d.DeliverJob(h.ctx, gone, j.NextAt, id+"x"); !errors.Is(err, ErrJobNoRoom) {
		t.Errorf("DeliverJob for an account no adapter serves: %v, want ErrJobNoRoom", err)
	}
}

func TestJobOccurrenceOfRecordID(t *testing.T) {
	for _, c := range []struct {
		rid, job string
		ok       bool
	}{
		{RecordID(channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "-100"},
			MessageID: jobs.OccurrenceID("j0123abcd", time.Unix(1700000000, 0))}), "j0123abcd", true},
		{"telegram:default:-100:4711", "", false},
		{"web:default:c:job:x:notanumber", "", false},
	} {
		job, ok := jobOccurrence(c.rid)
		if job != c.job || ok != c.ok {
			t.Errorf("jobOccurrence(%q) = %q, %v; want %q, %v", c.rid, job, ok, c.job, c.ok)
		}
	}
}

// TestJobFramingSaysTheJobsZone: the framing tells the agent the due time
// in the zone the setter's time was read in — a cron job's tz, else the
// agent's jobs.timezone — not in UTC, so the agent speaks of the time the
// setter asked for.
func TestJobFramingSaysTheJobsZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err) // sessions embeds time/tzdata
	}
	d := &Dispatcher{opts: Options{Jobs: JobOptions{Zone: func(string) *time.Location { return berlin }}}}
	due := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) // 09:00 in Berlin
	one := sessions.Job{ID: "j1", AgentID: "main", Text: "stand-up", Schedule: sessions.JobSchedule{At: due}}
	if got := JobInbound(one, due, d.jobZone(one), "occ", due).Text; !strings.Contains(got, "due 2026-12-01 09:00 CET]") {
		t.Errorf("one-shot framing %q, want the due time in the agent's zone", got)
	}
	cron := sessions.Job{ID: "j2", AgentID: "main", Text: "stand-up", Schedule: sessions.JobSchedule{Cron: "0 17 * * *", TZ: "America/New_York"}}
	if got := JobInbound(cron, due.Add(14*time.Hour), d.jobZone(cron), "occ", due).Text; !strings.Contains(got, "due 2026-12-01 17:00 EST]") {
		t.Errorf("cron framing %q, want the due time in the job's own zone", got)
	}
}
