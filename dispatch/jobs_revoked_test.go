package dispatch

import (
	"errors"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// TestDeliverJobOfRevokedSetterRefused: Ann set a daily job in group -100;
// the operator then removed her from the group's allowFrom (or switched
// the group off). Her job's next occurrence is a message from her that
// the policy in force refuses: it never reaches the agent (SPEC §6) and
// DeliverJob refuses it (ErrJobRefused: the scheduler skips it, a
// recurring job goes on to its next occurrence, which runs again if she
// is allowed again). A job the operator set (no setter) in a room the
// policy still admits is delivered; once the room itself is refused, it
// is not.
func TestDeliverJobOfRevokedSetterRefused(t *testing.T) {
	h := newHarness(t, "", nil)
	roomOff := false
	rt := *h.d.Runtime()
	rt.Access = func(in channels.Inbound) Verdict { return Verdict{Allow: !roomOff && in.SenderID != "2"} }
	rt.Admits = func(in channels.Inbound) (bool, string) {
		switch {
		case roomOff:
			return false, "group not allowed"
		case in.SenderID == "2":
			return false, "sender not allowed"
		}
		return true, ""
	}
	h.d.SetRuntime(&rt)
	now := time.Now()
	job := func(sender, text string) sessions.Job {
		j, err := jobs.NewJob(jobs.Spec{AgentID: "main", SessionKey: "agent:main:tg:group:-100", Text: text,
			Schedule: sessions.JobSchedule{Cron: "0 9 * * *", TZ: "UTC"},
			Target:   sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: sender}}, now)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	ann, op := job("2", "revoked member's job"), job("", "operator's job")
	if err := h.d.DeliverJob(h.ctx, ann, ann.NextAt, jobs.OccurrenceID(ann.ID, ann.NextAt)); !errors.Is(err, ErrJobRefused) {
		t.Errorf("occurrence of a job whose setter the policy no longer admits: %v, want ErrJobRefused", err)
	}
	if err := h.d.DeliverJob(h.ctx, op, op.NextAt, jobs.OccurrenceID(op.ID, op.NextAt)); err != nil {
		t.Errorf("operator's job in an admitted room: %v", err)
	}
	h.drained()
	roomOff = true
	later := op.NextAt.Add(24 * time.Hour)
	if err := h.d.DeliverJob(h.ctx, op, later, jobs.OccurrenceID(op.ID, later)); !errors.Is(err, ErrJobRefused) {
		t.Errorf("operator's job in a room the policy no longer admits: %v, want ErrJobRefused", err)
	}
	h.drained()
	if modelSaw(h.m, "revoked member's job") {
		t.Error("the revoked member's job reached the agent")
	}
	if !modelSaw(h.m, "operator's job") {
		t.Error("the operator's job did not reach the agent")
	}
	if n := len(h.m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (the operator's job while its room was admitted)", n)
	}
}

// TestDeliverJobOfRemovedAgentRefused: a job of agent "gone", which the
// configuration no longer lists (removed, the daemon restarted): its
// occurrence is refused (ErrJobNoAgent: the scheduler notes it and a
// recurring job goes on, to run again if the agent comes back) instead of
// becoming a turn that fails and tells the room "This agent is not
// configured." at every occurrence.
func TestDeliverJobOfRemovedAgentRefused(t *testing.T) {
	h := newHarness(t, "", nil)
	now := time.Now()
	j, err := jobs.NewJob(jobs.Spec{AgentID: "gone", SessionKey: "agent:gone:tg:group:-100", Text: "daily digest",
		Schedule: sessions.JobSchedule{Cron: "0 9 * * *", TZ: "UTC"},
		Target:   sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: "2"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.d.DeliverJob(h.ctx, j, j.NextAt, jobs.OccurrenceID(j.ID, j.NextAt)); !errors.Is(err, ErrJobNoAgent) {
		t.Errorf("occurrence of a removed agent's job: %v, want ErrJobNoAgent", err)
	}
	h.drained()
	if texts := h.tg.texts(); len(texts) != 0 {
		t.Errorf("the room was told %q", texts)
	}
}
