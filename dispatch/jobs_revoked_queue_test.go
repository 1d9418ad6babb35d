package dispatch

import (
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// revokeSender makes the policy in force refuse sender (the operator took
// them off the room's allowFrom) and admit everyone else.
func revokeSender(h *harness, sender string) {
	rt := *h.d.Runtime()
	rt.Access = func(in channels.Inbound) Verdict { return Verdict{Allow: in.SenderID != sender, Privileged: true} }
	rt.Admits = func(in channels.Inbound) (bool, string) {
		if in.SenderID == sender {
			return false, "sender_not_allowed"
		}
		if in.ChatType == channels.Direct && in.SenderID == "" {
			return false, "no_sender"
		}
		return true, ""
	}
	h.d.SetRuntime(&rt)
}

func reminderOf(t *testing.T, target sessions.JobTarget, key string) sessions.Job {
	t.Helper()
	now := time.Now()
	j, err := jobs.NewJob(jobs.Spec{AgentID: "main", SessionKey: key, Text: "spam the room",
		Schedule: sessions.JobSchedule{At: now.Add(time.Hour)}, Target: target}, now)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestQueuedJobOccurrenceOfRevokedSetterIsDropped: an occurrence accepted
// before a reload that revoked its setter (it waited behind a turn) is
// asked again, like a member's queued message.
func TestQueuedJobOccurrenceOfRevokedSetterIsDropped(t *testing.T) {
	h := newHarness(t, "", nil)
	admitted := h.d.Runtime()
	j := reminderOf(t, sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group",
		SenderID: "2", SenderName: "Mallory"}, "agent:main:tg:group:-100")
	in := JobInbound(j, j.NextAt, time.UTC, jobs.OccurrenceID(j.ID, j.NextAt), time.Now())
	w := &work{RecordID: RecordID(in), chatMessage: chatMessage{In: in, AdmittedBy: admitted}}
	revokeSender(h, "2")
	if ok, _ := h.d.stillAdmitted(w); ok {
		t.Errorf("a queued occurrence of a revoked setter's job is still admitted")
	}
	op := reminderOf(t, sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "7", ChatType: "direct"},
		"agent:main:tg:direct:7")
	in = JobInbound(op, op.NextAt, time.UTC, jobs.OccurrenceID(op.ID, op.NextAt), time.Now())
	w = &work{RecordID: RecordID(in), chatMessage: chatMessage{In: in, AdmittedBy: admitted}}
	if ok, reason := h.d.stillAdmitted(w); !ok {
		t.Errorf("a queued occurrence of the operator's job is refused: %s", reason)
	}
}
