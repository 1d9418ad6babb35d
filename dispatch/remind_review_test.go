package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// fireJob does what the scheduler does with job id when it falls due:
// claim, deliver, settle.
func fireJob(t *testing.T, h *harness, id string) sessions.Job {
	t.Helper()
	ctx := context.Background()
	store := h.mgr.Backend().Jobs()
	j, err := store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	claimed, _, err := store.ClaimDueJobs(ctx, j.NextAt, "test", time.Minute, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if err := h.d.DeliverJob(h.ctx, j, j.NextAt, jobs.OccurrenceID(j.ID, j.NextAt)); err != nil {
		t.Fatalf("DeliverJob: %v", err)
	}
	if err := store.SettleJob(ctx, id, "test", sessions.JobSettle{Fired: j.NextAt, State: sessions.JobDone, NextAt: j.NextAt}); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRemindInTopicArrivesInTopic: a reminder set in a Telegram forum
// topic is delivered into the topic's session and answered in the topic,
// not in the group's general chat.
func TestRemindInTopicArrivesInTopic(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	m := remindMsg("2", "/remind in 2 hours stand-up")
	m.ThreadID, m.IsTopic = "7", true
	h.handle(m)
	h.drained()
	id := jobIDRe.FindString(strings.Join(h.tg.texts(), " "))
	if id == "" {
		t.Fatalf("/remind answered %q", h.tg.texts())
	}
	j := fireJob(t, h, id)
	if j.SessionKey != "agent:main:tg:group:-100:topic:7" || j.Target.ThreadID != "7" || !j.Target.IsTopic {
		t.Errorf("job stored for session %s, thread %q topic %v", j.SessionKey, j.Target.ThreadID, j.Target.IsTopic)
	}
	h.drained()
	sent := h.tg.sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want the /remind answer and the reminder's reply", len(sent))
	}
	for _, s := range sent {
		if s.Out.ChatID != "-100" || s.Out.ThreadID != "7" || !s.Out.IsTopic {
			t.Errorf("%q went to chat %s thread %q topic %v, want topic 7 of -100", s.Out.Text, s.Out.ChatID, s.Out.ThreadID, s.Out.IsTopic)
		}
	}
	if !strings.Contains(sent[1].Out.Text, "stand-up") {
		t.Errorf("the reminder's reply is %q", sent[1].Out.Text)
	}
	if msgs := h.history(j.SessionKey); countRole(msgs, "user") != 1 {
		t.Errorf("the topic's session holds %d user messages, want the reminder", countRole(msgs, "user"))
	}
}

// TestRemindSurvivesNew: /new starts a new conversation in the room; it
// does not cancel the room's reminders (they belong to the room and its
// session key, as OpenClaw's cron jobs belong to theirs). A reminder set
// before /new arrives after it, into the new session, framed so that
// the agent needs nothing of the old one.
func TestRemindSurvivesNew(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	h.handle(remindMsg("1", "/remind in 2 hours water the plants"))
	h.drained()
	id := jobIDRe.FindString(strings.Join(h.tg.texts(), " "))
	key := "agent:main:tg:group:-100"
	h.handle(remindMsg("1", "hello"))
	h.drained()
	before := sessionID(t, h, key)
	h.handle(remindMsg("1", "/new"))
	h.drained()
	after := sessionID(t, h, key)
	if after == before {
		t.Fatal("/new kept the session id")
	}
	if js, err := h.mgr.Backend().Jobs().ListJobs(context.Background(), sessions.JobFilter{ChatKey: "tg/default/-100", Active: true}); err != nil || len(js) != 1 {
		t.Fatalf("active jobs after /new: %v, %v; want the reminder", js, err)
	}
	fireJob(t, h, id)
	h.drained()
	texts := h.tg.texts()
	if last := texts[len(texts)-1]; !strings.Contains(last, "water the plants") {
		t.Errorf("last reply %q, want the reminder's", last)
	}
	if got := sessionID(t, h, key); got != after {
		t.Errorf("the reminder ran in session %s, want the new %s", got, after)
	}
	msgs := h.history(key)
	if len(msgs) == 0 || !strings.Contains(msgs[0].Text(), "[Scheduled reminder "+id) {
		t.Errorf("the new session starts with %v, want the reminder", msgs)
	}
}

func sessionID(t *testing.T, h *harness, key string) string {
	t.Helper()
	k, err := routing.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.mgr.Store(k.Agent)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := st.Get(k)
	if err != nil || !ok {
		t.Fatalf("no session %s: %v", key, err)
	}
	return e.SessionID
}

// TestRemindCancelSaysWhatItCancelled: cancelling a reminder that had
// already fired, or that a scheduler holds (it is firing), does not
// answer a plain "Cancelled" as if nothing would arrive.
func TestRemindCancelSaysWhatItCancelled(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	set := func(text string) string {
		n := len(h.tg.texts())
		h.handle(remindMsg("1", text))
		h.drained()
		return jobIDRe.FindString(strings.Join(h.tg.texts()[n:], " "))
	}
	fired, firing, pending := set("/remind in 1 hour a"), set("/remind in 2 hours b"), set("/remind in 3 hours c")
	fireJob(t, h, fired)
	h.drained()
	store := h.mgr.Backend().Jobs()
	j, err := store.Job(context.Background(), firing)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := store.ClaimDueJobs(context.Background(), j.NextAt, "replica-b", time.Hour, 1); err != nil || len(c) != 1 || c[0].ID != firing {
		t.Fatalf("claim: %v, %v", c, err)
	}
	n := len(h.tg.texts())
	for _, id := range []string{fired, firing, pending} {
		h.handle(remindMsg("1", "/remind cancel "+id))
	}
	h.drained()
	got := h.tg.texts()[n:]
	want := []string{"Reminder " + fired + " had already fired (", "Cancelled " + firing + ", but it was firing just now", "Cancelled " + pending + "."}
	if len(got) != len(want) {
		t.Fatalf("answers %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("answer %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
	if js, err := store.ListJobs(context.Background(), sessions.JobFilter{}); err != nil || len(js) != 0 {
		t.Errorf("jobs left: %v, %v", js, err)
	}
}

// TestRemindMalformedStoresNothing: a time the parser does not read (or
// would read wrong) is answered with what is wrong, and no job is stored.
func TestRemindMalformedStoresNothing(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	for _, text := range []string{"/remind 9:00 pm call mom", "/remind tomorrow morning call mom", "/remind next friday call mom",
		"/remind in 2 days at 09:00 dentist", "/remind in 2 hours", "/remind 2026-02-30 09:00 x", "/remind cron 0 9 * x"} {
		h.handle(remindMsg("1", text))
	}
	h.drained()
	for i, a := range h.tg.texts() {
		if !strings.HasPrefix(a, "Cannot set the reminder: ") {
			t.Errorf("answer %d = %q, want a refusal", i, a)
		}
	}
	if js, err := h.mgr.Backend().Jobs().ListJobs(context.Background(), sessions.JobFilter{}); err != nil || len(js) != 0 {
		t.Errorf("jobs stored: %v, %v", js, err)
	}
}
