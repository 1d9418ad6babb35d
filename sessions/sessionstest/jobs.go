package sessionstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
)

// JobsOpener returns a new, empty job store, or with share (a store it
// returned earlier) a second handle on share's storage, as another process
// or replica would open it. It releases what it opened when t ends.
type JobsOpener func(t *testing.T, share sessions.Jobs) sessions.Jobs

// TestJobs runs the conformance suite of sessions.Jobs against the stores
// open returns, as parallel subtests.
func TestJobs(t *testing.T, open JobsOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open JobsOpener)
	}{
		{"AddListRemove", testJobsAddList},
		{"RoundTrip", testJobsRoundTrip},
		{"RefusedInput", testJobsRefused},
		{"HostileIDs", testJobsHostileIDs},
		{"ClaimOnceAcrossHandles", testJobsClaimOnce},
		{"ClaimRunsOut", testJobsClaimRunsOut},
		{"ClaimNextDue", testJobsClaimNextDue},
		{"SettleNextOccurrence", testJobsSettle},
		{"DisableWhileClaimed", testJobsDisable},
		{"SettleBatch", testJobsSettleBatch},
		{"MoveRoom", testJobsMove},
		{"EndedJobs", testJobsEnded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

var jobT0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// testJob is job i of chat, due at jobT0+i minutes.
func testJob(i int, chat string) sessions.Job {
	return sessions.Job{
		ID: fmt.Sprintf("j%04d", i), AgentID: "main", SessionKey: "agent:main:telegram:group:" + chat,
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: chat, ChatType: "group",
			SenderID: "42", SenderName: "Ann"},
		Text: fmt.Sprintf("reminder %d", i), Schedule: sessions.JobSchedule{At: jobT0.Add(time.Duration(i) * time.Minute)},
		State: sessions.JobActive, NextAt: jobT0.Add(time.Duration(i) * time.Minute), CreatedAt: jobT0.Add(-time.Hour),
	}
}

func addJob(t *testing.T, s sessions.Jobs, j sessions.Job) {
	t.Helper()
	if err := s.AddJob(context.Background(), j); err != nil {
		t.Fatalf("AddJob %s: %v", j.ID, err)
	}
}

func jobIDs(js []sessions.Job) []string {
	ids := []string{}
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}

func listJobs(t *testing.T, s sessions.Jobs, f sessions.JobFilter) []string {
	t.Helper()
	js, err := s.ListJobs(context.Background(), f)
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	return jobIDs(js)
}

func testJobsAddList(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	addJob(t, s, testJob(3, "-100"))
	addJob(t, s, testJob(1, "-100"))
	addJob(t, s, testJob(2, "-200"))
	if err := s.AddJob(ctx, testJob(1, "-100")); !errors.Is(err, sessions.ErrJobExists) {
		t.Fatalf("AddJob of a stored id: %v, want ErrJobExists", err)
	}
	other := open(t, s)
	for _, c := range []struct {
		name string
		f    sessions.JobFilter
		want []string
	}{
		{"all, due first", sessions.JobFilter{}, []string{"j0001", "j0002", "j0003"}},
		{"one room", sessions.JobFilter{ChatKey: "telegram/default/-100"}, []string{"j0001", "j0003"}},
		{"one session", sessions.JobFilter{SessionKey: "agent:main:telegram:group:-200"}, []string{"j0002"}},
		{"another agent", sessions.JobFilter{AgentID: "other"}, []string{}},
	} {
		if diff := cmp.Diff(c.want, listJobs(t, other, c.f)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if err := other.RemoveJob(ctx, "j0001"); err != nil {
		t.Fatalf("RemoveJob: %v", err)
	}
	if err := s.RemoveJob(ctx, "j0001"); !errors.Is(err, sessions.ErrNoJob) {
		t.Fatalf("RemoveJob again: %v, want ErrNoJob", err)
	}
	if _, err := s.Job(ctx, "j0001"); !errors.Is(err, sessions.ErrNoJob) {
		t.Fatalf("Job of a removed job: %v, want ErrNoJob", err)
	}
	if diff := cmp.Diff([]string{"j0002", "j0003"}, listJobs(t, s, sessions.JobFilter{})); diff != "" {
		t.Errorf("after remove (-want +got):\n%s", diff)
	}
}

func testJobsRoundTrip(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	j := testJob(1, "-100")
	j.ID, j.Text = "jcron", "stand-up «in the usual room» 🙂"
	j.Schedule = sessions.JobSchedule{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}
	j.Target.ThreadID, j.Target.IsTopic, j.Target.GuildID, j.Target.CaseSensitive = "7", true, "g1", true
	j.Note = "missed 2 occurrences while down"
	addJob(t, s, j)
	got, err := open(t, s).Job(ctx, "jcron")
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if diff := cmp.Diff(j, got); diff != "" {
		t.Errorf("stored job (-want +got):\n%s", diff)
	}
}

func testJobsRefused(t *testing.T, open JobsOpener) {
	s := open(t, nil)
	for _, c := range []struct {
		name string
		edit func(*sessions.Job)
	}{
		{"empty text", func(j *sessions.Job) { j.Text = "  " }},
		{"no schedule", func(j *sessions.Job) { j.Schedule = sessions.JobSchedule{} }},
		{"time and cron", func(j *sessions.Job) { j.Schedule.Cron = "@daily" }},
		{"no room", func(j *sessions.Job) { j.Target.ChatID = "" }},
		{"unknown state", func(j *sessions.Job) { j.State = "paused" }},
		{"NUL in text", func(j *sessions.Job) { j.Text = "a\x00b" }},
		{"text too long", func(j *sessions.Job) { j.Text = string(make([]byte, sessions.MaxJobText+1)) }},
	} {
		j := testJob(1, "-100")
		c.edit(&j)
		if err := s.AddJob(context.Background(), j); err == nil {
			t.Errorf("%s: AddJob accepted it", c.name)
		}
	}
	if ids := listJobs(t, s, sessions.JobFilter{}); len(ids) != 0 {
		t.Errorf("refused jobs were stored: %v", ids)
	}
}

// testJobsHostileIDs: an id or a filter no job can have (NUL, bad UTF-8,
// which PostgreSQL text refuses) is no job on every backend, never a
// driver error: `gateway jobs remove` and the API answer "no such job".
func testJobsHostileIDs(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	addJob(t, s, testJob(1, "-100"))
	for _, id := range []string{"a\x00b", "a\xffb"} {
		if err := s.RemoveJob(ctx, id); !errors.Is(err, sessions.ErrNoJob) {
			t.Errorf("RemoveJob(%q) = %v, want ErrNoJob", id, err)
		}
		if _, err := s.Job(ctx, id); !errors.Is(err, sessions.ErrNoJob) {
			t.Errorf("Job(%q) = %v, want ErrNoJob", id, err)
		}
		if err := s.DisableJob(ctx, id, "note"); !errors.Is(err, sessions.ErrNoJob) {
			t.Errorf("DisableJob(%q) = %v, want ErrNoJob", id, err)
		}
		for _, f := range []sessions.JobFilter{{AgentID: id}, {SessionKey: id}, {ChatKey: id}} {
			js, err := s.ListJobs(ctx, f)
			if err != nil || len(js) != 0 {
				t.Errorf("ListJobs(%+v) = %v, %v; want none", f, jobIDs(js), err)
			}
		}
	}
	if ids := listJobs(t, s, sessions.JobFilter{}); len(ids) != 1 {
		t.Errorf("jobs after hostile ids: %v", ids)
	}
}

// testJobsClaimOnce claims 60 due jobs from two handles and several
// goroutines at once: each job goes to exactly one claimer.
func testJobsClaimOnce(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	a := open(t, nil)
	b := open(t, a)
	const n = 60
	for i := range n {
		addJob(t, a, testJob(i, "-100"))
	}
	addJob(t, a, testJob(500, "-100")) // not due
	now := jobT0.Add(n * time.Minute)
	var (
		mu  sync.Mutex
		got = map[string]string{}
		wg  sync.WaitGroup
	)
	for w := range 6 {
		s := []sessions.Jobs{a, b}[w%2]
		owner := fmt.Sprintf("owner-%d", w)
		wg.Go(func() {
			for {
				js, _, err := s.ClaimDueJobs(ctx, now, owner, time.Minute, 7)
				if err != nil {
					t.Errorf("ClaimDueJobs: %v", err)
					return
				}
				if len(js) == 0 {
					return
				}
				mu.Lock()
				for _, j := range js {
					if prev, ok := got[j.ID]; ok {
						t.Errorf("job %s claimed by %s and %s", j.ID, prev, owner)
					}
					got[j.ID] = owner
					if j.ClaimOwner != owner || !j.ClaimUntil.Equal(now.Add(time.Minute)) {
						t.Errorf("claimed job %s: claim %q until %v", j.ID, j.ClaimOwner, j.ClaimUntil)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("%d jobs claimed, want %d", len(got), n)
	}
	js, next, err := a.ClaimDueJobs(ctx, now, "late", time.Minute, 0)
	if err != nil || len(js) != 0 {
		t.Fatalf("a claim after all were taken: %v, %v", jobIDs(js), err)
	}
	if want := now.Add(time.Minute); !next.Equal(want) {
		t.Errorf("next due = %v, want %v (the claims run out before j0500 is due)", next, want)
	}
}

// testJobsClaimRunsOut: a claim whose holder never settles runs out at
// its lease, and the holder's late settle is refused.
func testJobsClaimRunsOut(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	a := open(t, nil)
	b := open(t, a)
	addJob(t, a, testJob(0, "-100"))
	js, _, err := a.ClaimDueJobs(ctx, jobT0, "dead", time.Minute, 10)
	if err != nil || len(js) != 1 {
		t.Fatalf("first claim: %v, %v", jobIDs(js), err)
	}
	js, next, err := b.ClaimDueJobs(ctx, jobT0.Add(30*time.Second), "alive", time.Minute, 10)
	if err != nil || len(js) != 0 {
		t.Fatalf("claim inside the lease: %v, %v", jobIDs(js), err)
	}
	if want := jobT0.Add(time.Minute); !next.Equal(want) {
		t.Errorf("next due inside the lease = %v, want %v", next, want)
	}
	later := jobT0.Add(61 * time.Second)
	js, _, err = b.ClaimDueJobs(ctx, later, "alive", time.Minute, 10)
	if err != nil || len(js) != 1 {
		t.Fatalf("claim after the lease: %v, %v", jobIDs(js), err)
	}
	settle := sessions.JobSettle{Fired: jobT0, State: sessions.JobDone, NextAt: jobT0}
	if err := a.SettleJob(ctx, "j0000", "dead", settle); !errors.Is(err, sessions.ErrJobClaimLost) {
		t.Fatalf("settle by the holder that lost the claim: %v, want ErrJobClaimLost", err)
	}
	if err := b.SettleJob(ctx, "j0000", "alive", settle); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if err := b.SettleJob(ctx, "nope", "alive", settle); !errors.Is(err, sessions.ErrNoJob) {
		t.Fatalf("settle of no job: %v, want ErrNoJob", err)
	}
}

// testJobsClaimNextDue: the next due time a claim returns is that of the
// first job it left unclaimed (due already when the limit cut the claim
// short), never one of those it just claimed; then that of the first
// job not due yet.
func testJobsClaimNextDue(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	for i := range 3 {
		addJob(t, s, testJob(i, "-100"))
	}
	addJob(t, s, testJob(60, "-100"))
	now := jobT0.Add(5 * time.Minute)
	js, next, err := s.ClaimDueJobs(ctx, now, "me", time.Hour, 2)
	if err != nil || len(js) != 2 || js[0].ID != "j0000" || js[1].ID != "j0001" {
		t.Fatalf("claim of two: %v, %v", jobIDs(js), err)
	}
	if want := jobT0.Add(2 * time.Minute); !next.Equal(want) {
		t.Errorf("next due after a claim cut short = %v, want %v (j0002, due and unclaimed)", next, want)
	}
	js, next, err = s.ClaimDueJobs(ctx, now, "me", time.Hour, 10)
	if err != nil || len(js) != 1 || js[0].ID != "j0002" {
		t.Fatalf("claim of the rest: %v, %v", jobIDs(js), err)
	}
	if want := jobT0.Add(time.Hour); !next.Equal(want) {
		t.Errorf("next due after every due job is claimed = %v, want %v (j0060)", next, want)
	}
}

// testJobsSettle settles a recurring job's occurrence: counted, claim
// released, due again at the next occurrence.
func testJobsSettle(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	j := testJob(0, "-100")
	j.Schedule = sessions.JobSchedule{Cron: "0 * * * *"}
	addJob(t, s, j)
	js, _, err := s.ClaimDueJobs(ctx, jobT0, "me", time.Minute, 10)
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %v, %v", jobIDs(js), err)
	}
	nextAt := jobT0.Add(time.Hour)
	if err := s.SettleJob(ctx, j.ID, "me", sessions.JobSettle{Fired: jobT0, State: sessions.JobActive, NextAt: nextAt}); err != nil {
		t.Fatalf("settle: %v", err)
	}
	got, err := open(t, s).Job(ctx, j.ID)
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	want := j
	want.NextAt, want.LastFiredAt, want.Fires = nextAt, jobT0, 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settled job (-want +got):\n%s", diff)
	}
	js, next, err := s.ClaimDueJobs(ctx, jobT0.Add(time.Minute), "me", time.Minute, 10)
	if err != nil || len(js) != 0 || !next.Equal(nextAt) {
		t.Errorf("claim before the next occurrence: %v, next %v, %v; want none, next %v", jobIDs(js), next, err, nextAt)
	}
	done := sessions.JobSettle{State: sessions.JobDisabled, NextAt: nextAt, Note: "room refused delivery"}
	if _, _, err := s.ClaimDueJobs(ctx, nextAt, "me", time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleJob(ctx, j.ID, "me", done); err != nil {
		t.Fatalf("settle disabled: %v", err)
	}
	if ids := listJobs(t, s, sessions.JobFilter{Active: true}); len(ids) != 0 {
		t.Errorf("active jobs after disabling: %v", ids)
	}
	js, next, err = s.ClaimDueJobs(ctx, nextAt.Add(time.Hour), "me", time.Minute, 10)
	if err != nil || len(js) != 0 || !next.IsZero() {
		t.Errorf("claim of a disabled job: %v, next %v, %v", jobIDs(js), next, err)
	}
}

// testJobsDisable disables a claimed job from another handle: it is not
// claimed again, its holder's settle cannot revive it, and an ended job
// keeps its state.
func testJobsDisable(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	a := open(t, nil)
	b := open(t, a)
	j := testJob(0, "-100")
	j.Schedule = sessions.JobSchedule{Cron: "0 * * * *"}
	addJob(t, a, j)
	if js, _, err := a.ClaimDueJobs(ctx, jobT0, "me", time.Minute, 10); err != nil || len(js) != 1 {
		t.Fatalf("claim: %v, %v", jobIDs(js), err)
	}
	if err := b.DisableJob(ctx, j.ID, "disabled: 403 bot was kicked"); err != nil {
		t.Fatalf("DisableJob: %v", err)
	}
	settle := sessions.JobSettle{Fired: jobT0, State: sessions.JobActive, NextAt: jobT0.Add(time.Hour)}
	if err := a.SettleJob(ctx, j.ID, "me", settle); !errors.Is(err, sessions.ErrJobClaimLost) {
		t.Errorf("settle after disable: %v, want ErrJobClaimLost", err)
	}
	got, err := a.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != sessions.JobDisabled || got.Note != "disabled: 403 bot was kicked" || got.ClaimOwner != "" {
		t.Errorf("disabled job: state %q note %q claim %q", got.State, got.Note, got.ClaimOwner)
	}
	if err := b.DisableJob(ctx, j.ID, "again"); err != nil {
		t.Errorf("DisableJob of a disabled job: %v", err)
	}
	if got, _ := a.Job(ctx, j.ID); got.Note != "disabled: 403 bot was kicked" {
		t.Errorf("a second disable changed the note to %q", got.Note)
	}
	if err := b.DisableJob(ctx, "nope", "x"); !errors.Is(err, sessions.ErrNoJob) {
		t.Errorf("DisableJob of no job: %v, want ErrNoJob", err)
	}
}

// testJobsSettleBatch settles three claimed jobs at once: one settled,
// one whose claim another took, one removed; each gets its own outcome.
func testJobsSettleBatch(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	s := open(t, nil)
	for i := range 3 {
		addJob(t, s, testJob(i, "-100"))
	}
	if js, _, err := s.ClaimDueJobs(ctx, jobT0.Add(2*time.Minute), "me", time.Minute, 10); err != nil || len(js) != 3 {
		t.Fatalf("claim: %v, %v", jobIDs(js), err)
	}
	if js, _, err := s.ClaimDueJobs(ctx, jobT0.Add(4*time.Minute), "other", time.Minute, 1); err != nil || len(js) != 1 || js[0].ID != "j0000" {
		t.Fatalf("the claim that ran out: %v, %v", jobIDs(js), err)
	}
	if err := s.RemoveJob(ctx, "j0002"); err != nil {
		t.Fatal(err)
	}
	done := func(id string) sessions.JobSettled {
		return sessions.JobSettled{ID: id, JobSettle: sessions.JobSettle{Fired: jobT0, State: sessions.JobDone, NextAt: jobT0}}
	}
	errs, err := s.SettleJobs(ctx, "me", []sessions.JobSettled{done("j0000"), done("j0001"), done("j0002")})
	if err != nil || len(errs) != 3 {
		t.Fatalf("SettleJobs: %v, %v", errs, err)
	}
	if !errors.Is(errs[0], sessions.ErrJobClaimLost) || errs[1] != nil || !errors.Is(errs[2], sessions.ErrNoJob) {
		t.Errorf("outcomes %v, want claim lost, nil, no job", errs)
	}
	if j, _ := s.Job(ctx, "j0001"); j.State != sessions.JobDone || j.Fires != 1 {
		t.Errorf("settled job: %s fires %d", j.State, j.Fires)
	}
	if j, _ := s.Job(ctx, "j0000"); j.State != sessions.JobActive || j.ClaimOwner != "other" {
		t.Errorf("the other's job: %s claim %q", j.State, j.ClaimOwner)
	}
}

// testJobsMove moves the jobs of chat -100 to chat -1001 (a group upgraded
// to a supergroup) from another handle: they are listed under the new
// room and session, a claimed one keeps its claim and settles under it,
// another room's job stays, and a second move changes nothing.
func testJobsMove(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	a := open(t, nil)
	b := open(t, a)
	oldKey, newKey := "agent:main:telegram:group:-100", "agent:main:telegram:group:-1001"
	j0, j1, other := testJob(0, "-100"), testJob(1, "-100"), testJob(2, "-200")
	j1.SessionKey = "agent:main:telegram:group:-100:thread:7" // not the moved session: keeps its key
	for _, j := range []sessions.Job{j0, j1, other} {
		addJob(t, a, j)
	}
	if js, _, err := a.ClaimDueJobs(ctx, jobT0, "me", time.Minute, 1); err != nil || len(js) != 1 || js[0].ID != j0.ID {
		t.Fatalf("claim: %v, %v", jobIDs(js), err)
	}
	n, err := b.MoveJobs(ctx, j0.Target.ChatKey(), "-1001", oldKey, newKey)
	if err != nil || n != 2 {
		t.Fatalf("MoveJobs: %d, %v; want 2 moved", n, err)
	}
	if n, err := b.MoveJobs(ctx, j0.Target.ChatKey(), "-1001", oldKey, newKey); err != nil || n != 0 {
		t.Errorf("MoveJobs again: %d, %v; want 0", n, err)
	}
	newRoom := sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-1001"}.ChatKey()
	if got := listJobs(t, a, sessions.JobFilter{ChatKey: newRoom}); !cmp.Equal(got, []string{j0.ID, j1.ID}) {
		t.Errorf("jobs of the new room: %v", got)
	}
	if got := listJobs(t, a, sessions.JobFilter{ChatKey: j0.Target.ChatKey()}); len(got) != 0 {
		t.Errorf("jobs left in the old room: %v", got)
	}
	if got := listJobs(t, a, sessions.JobFilter{SessionKey: newKey}); !cmp.Equal(got, []string{j0.ID}) {
		t.Errorf("jobs of the moved session: %v", got)
	}
	g0, err := a.Job(ctx, j0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g0.Target.ChatID != "-1001" || g0.SessionKey != newKey || g0.ClaimOwner != "me" || g0.Text != j0.Text ||
		!g0.NextAt.Equal(j0.NextAt) || g0.Target.SenderID != "42" {
		t.Errorf("moved job: %+v", g0)
	}
	if g1, err := a.Job(ctx, j1.ID); err != nil || g1.SessionKey != j1.SessionKey || g1.Target.ChatID != "-1001" {
		t.Errorf("moved thread job: %+v, %v", g1, err)
	}
	if err := a.SettleJob(ctx, j0.ID, "me", sessions.JobSettle{Fired: jobT0, State: sessions.JobDone, NextAt: jobT0}); err != nil {
		t.Errorf("settle of a moved job under its claim: %v", err)
	}
	if g0, _ := b.Job(ctx, j0.ID); g0.Target.ChatID != "-1001" || g0.State != sessions.JobDone {
		t.Errorf("moved job after its settle: chat %s state %s", g0.Target.ChatID, g0.State)
	}
	if got := listJobs(t, b, sessions.JobFilter{ChatKey: other.Target.ChatKey()}); !cmp.Equal(got, []string{other.ID}) {
		t.Errorf("another room's jobs: %v", got)
	}
}

// testJobsEnded: a job that ended (settled done, or added ended as a copy
// brings it) is listed with the ended ones only, read from another
// handle, holds no claim, keeps its state when disabled, moves with its
// room, and is removed once; its id may then be added again, live.
func testJobsEnded(t *testing.T, open JobsOpener) {
	ctx := context.Background()
	a := open(t, nil)
	fired, copied, live := testJob(0, "-100"), testJob(1, "-100"), testJob(60, "-100")
	copied.State, copied.Fires, copied.LastFiredAt, copied.Note = sessions.JobMissed, 0, time.Time{}, "missed while down"
	for _, j := range []sessions.Job{fired, copied, live} {
		addJob(t, a, j)
	}
	if js, _, err := a.ClaimDueJobs(ctx, jobT0.Add(5*time.Minute), "me", time.Minute, 10); err != nil || len(js) != 1 || js[0].ID != fired.ID {
		t.Fatalf("claim: %v, %v; want only %s (the copied job ended)", jobIDs(js), err, fired.ID)
	}
	done := sessions.JobSettle{Fired: jobT0, State: sessions.JobDone, NextAt: jobT0}
	if err := a.SettleJob(ctx, fired.ID, "me", done); err != nil {
		t.Fatal(err)
	}
	b := open(t, a)
	if got := listJobs(t, b, sessions.JobFilter{}); !cmp.Equal(got, []string{fired.ID, copied.ID, live.ID}) {
		t.Errorf("all jobs: %v", got)
	}
	if got := listJobs(t, b, sessions.JobFilter{Active: true}); !cmp.Equal(got, []string{live.ID}) {
		t.Errorf("active jobs: %v", got)
	}
	if g, err := b.Job(ctx, fired.ID); err != nil || g.State != sessions.JobDone || g.Fires != 1 || g.ClaimOwner != "" {
		t.Errorf("the fired job: %+v, %v", g, err)
	}
	if g, err := b.Job(ctx, copied.ID); err != nil || g.State != sessions.JobMissed || g.Note != copied.Note {
		t.Errorf("the copied ended job: %+v, %v", g, err)
	}
	if err := b.SettleJob(ctx, fired.ID, "me", done); !errors.Is(err, sessions.ErrJobClaimLost) {
		t.Errorf("a second settle of the ended job: %v, want ErrJobClaimLost", err)
	}
	if err := b.DisableJob(ctx, fired.ID, "x"); err != nil {
		t.Errorf("DisableJob of an ended job: %v", err)
	}
	if err := a.AddJob(ctx, fired); !errors.Is(err, sessions.ErrJobExists) {
		t.Errorf("AddJob of the ended job's id: %v, want ErrJobExists", err)
	}
	if n, err := b.MoveJobs(ctx, fired.Target.ChatKey(), "-1001", "", ""); err != nil || n != 3 {
		t.Errorf("MoveJobs: %d, %v; want the 3 jobs of the room, ended ones too", n, err)
	}
	if g, err := a.Job(ctx, fired.ID); err != nil || g.State != sessions.JobDone || g.Target.ChatID != "-1001" {
		t.Errorf("the moved ended job: %+v, %v", g, err)
	}
	if err := b.RemoveJob(ctx, fired.ID); err != nil {
		t.Fatalf("RemoveJob of the ended job: %v", err)
	}
	if err := a.RemoveJob(ctx, fired.ID); !errors.Is(err, sessions.ErrNoJob) {
		t.Errorf("RemoveJob again: %v, want ErrNoJob", err)
	}
	if got := listJobs(t, a, sessions.JobFilter{}); !cmp.Equal(got, []string{copied.ID, live.ID}) {
		t.Errorf("all jobs after the remove: %v", got)
	}
	again := fired
	again.NextAt = jobT0.Add(2 * time.Hour)
	addJob(t, b, again)
	if js, _, err := a.ClaimDueJobs(ctx, again.NextAt, "me", time.Minute, 10); err != nil || len(js) != 2 {
		t.Errorf("claim after the id was added again: %v, %v; want it and %s", jobIDs(js), err, live.ID)
	}
}
