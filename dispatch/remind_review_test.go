package dispatch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
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

// TestRemindInThreadArrivesInThread: a reminder set in a Telegram forum
// topic, or in a thread (as Discord's arrive: the parent channel and the
// thread), is delivered into that topic's or thread's session and
// answered there, not in the group's or channel's main chat.
func TestRemindInThreadArrivesInThread(t *testing.T) {
	for _, c := range []struct {
		name, thread, key string
		topic             bool
	}{
		{"forum topic", "7", "agent:main:tg:group:-100:topic:7", true},
		{"thread", "555", "agent:main:tg:group:-100:thread:555", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "", nil)
			withRoomMembers(h)
			m := remindMsg("2", "/remind in 2 hours stand-up")
			m.ThreadID, m.IsTopic = c.thread, c.topic
			h.handle(m)
			h.drained()
			id := jobIDRe.FindString(strings.Join(h.tg.texts(), " "))
			if id == "" {
				t.Fatalf("/remind answered %q", h.tg.texts())
			}
			j := fireJob(t, h, id)
			if j.SessionKey != c.key || j.Target.ThreadID != c.thread || j.Target.IsTopic != c.topic {
				t.Errorf("job stored for session %s, thread %q topic %v", j.SessionKey, j.Target.ThreadID, j.Target.IsTopic)
			}
			h.drained()
			sent := h.tg.sent()
			if len(sent) != 2 {
				t.Fatalf("sent %d messages, want the /remind answer and the reminder's reply", len(sent))
			}
			for _, s := range sent {
				if s.Out.ChatID != "-100" || s.Out.ThreadID != c.thread || s.Out.IsTopic != c.topic {
					t.Errorf("%q went to chat %s thread %q topic %v, want thread %s of -100", s.Out.Text, s.Out.ChatID, s.Out.ThreadID, s.Out.IsTopic, c.thread)
				}
			}
			if !strings.Contains(sent[1].Out.Text, "stand-up") {
				t.Errorf("the reminder's reply is %q", sent[1].Out.Text)
			}
			if msgs := h.history(c.key); countRole(msgs, "user") != 1 {
				t.Errorf("the thread's session holds %d user messages, want the reminder", countRole(msgs, "user"))
			}
		})
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

// TestJobGivenUpOnlyWhenTheRoomRefuses: a job is disabled
// (Options.JobGivenUp) when its occurrence's reply is refused by the
// platform (the bot was kicked or blocked), not when the turn is given up
// (it kept failing: a store error, a crash loop), nor when the send failed for a reason
// that says nothing about the room (a timeout, a flood wait): a recurring
// job must not end for good on one bad morning.
func TestJobGivenUpOnlyWhenTheRoomRefuses(t *testing.T) {
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond}
	defer func(b time.Duration) { rateLimitBudget = b }(rateLimitBudget)
	rateLimitBudget = time.Second // the flood wait (5 s) outlasts the outbox's budget
	for _, c := range []struct {
		name    string
		model   error
		send    error
		disable bool
	}{
		{"turn given up", errBoom, nil, false},
		{"send times out", nil, errors.New("telegram: sendMessage: context deadline exceeded"), false},
		{"flood wait", nil, channels.Refusal(retryAfterErr{}), false},
		{"bot kicked", nil, channels.Refusal(errors.New("telegram: sendMessage: 403 Forbidden: bot was kicked")), true},
		// The account's token was revoked or rotated (before the config
		// caught up): the room refused nothing.
		{"token refused", nil, &telegram.APIError{Method: "sendMessage", Code: 401, Description: "Unauthorized"}, false},
		{"token unknown", nil, &telegram.APIError{Method: "sendMessage", Code: 404, Description: "Not Found"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &model{reply: func(llm.Request) (string, error) { return "ok", nil }}
			var (
				mu       sync.Mutex
				disabled []string
			)
			h := newHarness(t, "", m, func(h *harness) {
				h.disp = func(o *Options) {
					o.MaxFailures = 1
					o.JobGivenUp = func(_ context.Context, id, why string) {
						mu.Lock()
						disabled = append(disabled, id)
						mu.Unlock()
					}
				}
			})
			if c.send != nil {
				h.tg.failSend = func(channels.Outbound, int) error { return c.send }
			}
			now := time.Now()
			j, err := jobs.NewJob(jobs.Spec{AgentID: "main", SessionKey: "agent:main:tg:group:-100", Text: "stand-up",
				Schedule: sessions.JobSchedule{Cron: "0 9 * * *"},
				Target:   sessions.JobTarget{Channel: "tg", AccountID: "default", ChatID: "-100", ChatType: "group", SenderID: "2"}}, now)
			if err != nil {
				t.Fatal(err)
			}
			if c.model != nil { // the turn fails until it is given up (a session store error, a crash loop)
				w := acceptOnly(t, h, JobInbound(j, j.NextAt, time.UTC, jobs.OccurrenceID(j.ID, j.NextAt), now))
				h.d.fails.failed(h.ctx, []*work{w}, h.d.log, c.model)
			} else if err := h.d.DeliverJob(h.ctx, j, j.NextAt, jobs.OccurrenceID(j.ID, j.NextAt)); err != nil {
				t.Fatal(err)
			}
			h.drained()
			eventually(t, "the dead letter", func() bool { return len(letters(t, h)) == 1 })
			mu.Lock()
			defer mu.Unlock()
			if got := len(disabled) == 1 && disabled[0] == j.ID; got != c.disable || len(disabled) > 1 {
				t.Errorf("jobs disabled: %v, want the job disabled %v", disabled, c.disable)
			}
		})
	}
}

// retryAfterErr is a platform's flood-control answer (Telegram 429).
type retryAfterErr struct{}

func (retryAfterErr) Error() string {
	return "telegram: sendMessage: 429 Too Many Requests (retry after 5s)"
}
func (retryAfterErr) RetryDelay() time.Duration { return 5 * time.Second }

// TestRemindListSaysWhereEachArrives: a forum's topics share one list of
// reminders (the chat's); /remind list in a topic marks those that arrive
// elsewhere (another topic, the main chat) and not its own.
func TestRemindListSaysWhereEachArrives(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	inTopic := func(topic, text string) channels.Inbound {
		m := remindMsg("1", text)
		if topic != "" {
			m.ThreadID, m.IsTopic = topic, true
		}
		return m
	}
	h.handle(inTopic("7", "/remind in 2 hours here"))
	h.handle(inTopic("9", "/remind in 3 hours there"))
	h.handle(inTopic("", "/remind in 4 hours main"))
	h.drained()
	n := len(h.tg.texts())
	h.handle(inTopic("7", "/remind list"))
	h.drained()
	got := h.tg.texts()[n:]
	if len(got) != 1 {
		t.Fatalf("answers %q", got)
	}
	want := map[string]string{"here": "", "there": " (in topic 9)", "main": " (in the main chat)"}
	for _, line := range strings.Split(got[0], "\n")[1:] {
		for text, mark := range want {
			if strings.Contains(line, text) {
				if mark == "" && strings.Contains(line, "(in ") || mark != "" && !strings.HasSuffix(line, mark) {
					t.Errorf("line %q, want it marked %q", line, mark)
				}
				delete(want, text)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("not listed: %v in %q", want, got[0])
	}
}

// TestNoteJobMissedTellsTheRoom: a one-shot reminder the scheduler found
// past its grace window (the gateway was down) is not delivered, but its
// room is told, in its topic, with the due time in the chat's zone and
// the reminder's text; the notice replies to nothing (the occurrence is
// not a platform message).
func TestNoteJobMissedTellsTheRoom(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	m := remindMsg("1", "/remind in 2 hours call the dentist")
	m.ThreadID, m.IsTopic = "7", true
	h.handle(m)
	h.drained()
	id := jobIDRe.FindString(strings.Join(h.tg.texts(), " "))
	j, err := h.mgr.Backend().Jobs().Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := len(h.tg.sent())
	h.d.NoteJobMissed(context.Background(), j, j.NextAt)
	sent := h.tg.sent()[n:]
	if len(sent) != 1 {
		t.Fatalf("sent %d notices, want 1", len(sent))
	}
	o := sent[0].Out
	due := j.NextAt.UTC().Format("Mon 2006-01-02 15:04 MST")
	if o.ChatID != "-100" || o.ThreadID != "7" || !o.IsTopic || o.ReplyToID != "" {
		t.Errorf("notice went to chat %s thread %q topic %v replying to %q", o.ChatID, o.ThreadID, o.IsTopic, o.ReplyToID)
	}
	if want := "Reminder " + id + " was due " + due + " but was not delivered"; !strings.HasPrefix(o.Text, want) || !strings.HasSuffix(o.Text, "It said: call the dentist") {
		t.Errorf("notice %q, want it to start %q and end with the reminder's text", o.Text, want)
	}
}
