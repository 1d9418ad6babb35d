package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// inbox is a Deliver that keeps each occurrence id once, as the
// dispatcher's journal does, and counts repeats.
type inbox struct {
	mu      sync.Mutex
	got     map[string]int
	order   []string
	refuse  error // returned instead of delivering
	crashAt int   // deliver, then fail as a dying process would, on this call (1-based)
	calls   int
}

func newInbox() *inbox { return &inbox{got: map[string]int{}} }

func (b *inbox) deliver(ctx context.Context, j sessions.Job, at time.Time, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.refuse != nil {
		return b.refuse
	}
	b.got[id]++
	if b.got[id] == 1 {
		b.order = append(b.order, id)
	}
	if b.calls == b.crashAt {
		return errors.New("process died before settling")
	}
	return nil
}

func (b *inbox) ids() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.order...)
}

func newScheduler(t *testing.T, store sessions.Jobs, c *clock, b *inbox, owner string) *Scheduler {
	t.Helper()
	s, err := New(Options{Store: store, Deliver: b.deliver, Owner: owner, Now: c.Now, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tick(t *testing.T, s *Scheduler) time.Time {
	t.Helper()
	next, err := s.Tick(context.Background())
	if err != nil {
		t.Fatalf("Tick: %v", err)
	}
	return next
}

func job(id string, sched sessions.JobSchedule, now time.Time) sessions.Job {
	next, err := Next(sched, now)
	if err != nil || next.IsZero() {
		panic(fmt.Sprintf("job %s: no next occurrence: %v", id, err))
	}
	return sessions.Job{ID: id, AgentID: "main", SessionKey: "agent:main:telegram:group:-1",
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-1", ChatType: "group"},
		Text:   "reminder " + id, Schedule: sched, State: sessions.JobActive, NextAt: next, CreatedAt: now}
}

func add(t *testing.T, st sessions.Jobs, j sessions.Job) {
	t.Helper()
	if err := st.AddJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
}

func getJob(t *testing.T, st sessions.Jobs, id string) sessions.Job {
	t.Helper()
	j, err := st.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRecurringJobAcrossDSTAndReload runs "every day at 09:00" and "at
// 02:30" in Europe/Berlin over the spring-forward and fall-back days of
// 2026 on a fake clock, restarting the scheduler (a new store handle, as
// after a reload or restart) every few days: 09:00 stays 09:00 local
// (its UTC time moves by an hour), 02:30 on the day 02:00-03:00 does not
// exist fires at 03:00, and on the day 02:00-03:00 happens twice fires
// once.
func TestRecurringJobAcrossDSTAndReload(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 3, 26, 12, 0, 0, 0, berlin)}
	b := newInbox()
	store := filestore.NewJobs(dir, 0)
	add(t, store, job("nine", sessions.JobSchedule{Cron: "0 9 * * *", TZ: "Europe/Berlin"}, c.Now()))
	add(t, store, job("night", sessions.JobSchedule{Cron: "30 2 * * *", TZ: "Europe/Berlin"}, c.Now()))
	check := func(from time.Time, days int) {
		s := newScheduler(t, filestore.NewJobs(dir, 0), c, b, "replica-a")
		for now := from; now.Before(from.AddDate(0, 0, days)); now = now.Add(15 * time.Minute) {
			c.Set(now)
			tick(t, s)
		}
	}
	start := c.Now()
	check(start, 3)                  // Mar 26-28
	check(start.AddDate(0, 0, 3), 2) // Mar 29 (spring forward) - 30
	c.Set(time.Date(2026, 10, 23, 12, 0, 0, 0, berlin))
	// Down from Mar 31 to Oct 23: the last occurrence (Oct 23 09:00) is
	// three hours late, past the grace window: missed, not fired.
	check(c.Now(), 3) // Oct 23-25 (fall back on Oct 25)
	check(time.Date(2026, 10, 26, 12, 0, 0, 0, berlin), 1)

	var got []string
	for _, id := range b.ids() {
		var name string
		var unix int64
		fmt.Sscanf(strings.ReplaceAll(id, ":", " "), "job %s %d", &name, &unix)
		got = append(got, name+" "+time.Unix(unix, 0).In(berlin).Format("01-02 15:04 MST"))
	}
	want := []string{
		"night 03-27 02:30 CET", "nine 03-27 09:00 CET",
		"night 03-28 02:30 CET", "nine 03-28 09:00 CET",
		"night 03-29 03:00 CEST", "nine 03-29 09:00 CEST", // 02:30 does not exist on Mar 29
		"night 03-30 02:30 CEST", "nine 03-30 09:00 CEST",
		"night 03-31 02:30 CEST", "nine 03-31 09:00 CEST",
		"night 10-24 02:30 CEST", "nine 10-24 09:00 CEST",
		"night 10-25 02:30 CEST", "nine 10-25 09:00 CET", // 02:30 happens twice on Oct 25: once
		"night 10-26 02:30 CET", "nine 10-26 09:00 CET",
		"night 10-27 02:30 CET", "nine 10-27 09:00 CET",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fired:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for id, n := range b.got {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	nine := getJob(t, store, "nine")
	if nine.State != sessions.JobActive || nine.Fires != 9 {
		t.Errorf("nine after the run: state %s fires %d note %q", nine.State, nine.Fires, nine.Note)
	}
}

// TestMissedWhileDown: an occurrence up to the grace window late fires;
// later, a one-shot job ends missed with a note and a recurring one moves
// to its next occurrence, neither delivered.
func TestMissedWhileDown(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	b := newInbox()
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("late", sessions.JobSchedule{At: t0.Add(time.Minute)}, t0))
	add(t, store, job("toolate", sessions.JobSchedule{At: t0.Add(2 * time.Minute)}, t0))
	add(t, store, job("hourly", sessions.JobSchedule{Cron: "0 * * * *"}, t0))
	c.Set(t0.Add(11 * time.Minute)) // late is 10m late (fires), toolate 9m (fires), hourly due 10:00
	s := newScheduler(t, store, c, b, "a")
	tick(t, s)
	if got := b.ids(); len(got) != 2 {
		t.Fatalf("delivered %v, want late and toolate", got)
	}
	add(t, store, job("missed", sessions.JobSchedule{At: t0.Add(12 * time.Minute)}, t0))
	c.Set(t0.Add(3*time.Hour + 30*time.Minute)) // missed is 3h18m late; hourly missed 10:00, 11:00, 12:00
	var told []string
	s.opts.Missed = func(_ context.Context, j sessions.Job, due time.Time) {
		told = append(told, j.ID+" "+due.Format("15:04"))
	}
	tick(t, s)
	if want := []string{"missed 09:12"}; !slices.Equal(told, want) {
		t.Errorf("told of missed jobs %q, want %q (the one-shot once, not the recurring one)", told, want)
	}
	if got := b.ids(); len(got) != 2 {
		t.Fatalf("delivered %v after the long downtime, want nothing more", got)
	}
	m := getJob(t, store, "missed")
	if m.State != sessions.JobMissed || !strings.Contains(m.Note, "past the grace window of 10m0s") {
		t.Errorf("one-shot job missed: state %s note %q", m.State, m.Note)
	}
	h := getJob(t, store, "hourly")
	if h.State != sessions.JobActive || !h.NextAt.Equal(t0.Add(4*time.Hour)) || !strings.Contains(h.Note, "and 2 before it") {
		t.Errorf("recurring job missed: state %s next %v note %q", h.State, h.NextAt, h.Note)
	}
	c.Set(t0.Add(4*time.Hour + 5*time.Minute))
	tick(t, s)
	if got := b.ids(); len(got) != 3 || got[2] != OccurrenceID("hourly", t0.Add(4*time.Hour)) {
		t.Errorf("delivered %v, want the 13:00 occurrence of hourly last", got)
	}
}

// TestRoomGoneDisables: a delivery the room refuses for good disables the
// job (reported in its note) instead of retrying it; another failure
// leaves it to be retried when the claim runs out.
func TestRoomGoneDisables(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	b := newInbox()
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("gone", sessions.JobSchedule{Cron: "* * * * *"}, t0))
	s := newScheduler(t, store, c, b, "a")
	b.refuse = errors.New("storage hiccup")
	c.Set(t0.Add(time.Minute))
	tick(t, s)
	if j := getJob(t, store, "gone"); j.State != sessions.JobActive || j.ClaimOwner != "a" {
		t.Fatalf("after a passing failure: state %s claim %q, want active and still claimed", j.State, j.ClaimOwner)
	}
	b.refuse = fmt.Errorf("telegram: sendMessage: 403 bot was kicked: %w", ErrRoomGone)
	c.Set(t0.Add(2*time.Minute + time.Second)) // the claim (1 min) ran out
	tick(t, s)
	j := getJob(t, store, "gone")
	if j.State != sessions.JobDisabled || !strings.Contains(j.Note, "bot was kicked") {
		t.Fatalf("after the room refused: state %s note %q", j.State, j.Note)
	}
	calls := b.calls
	c.Set(t0.Add(time.Hour))
	tick(t, s)
	if b.calls != calls {
		t.Errorf("a disabled job was delivered again")
	}
}

// TestDiedBeforeSettleDeliversOnce: a scheduler that delivered and died
// before settling leaves the claim to run out; the next one delivers the
// same occurrence id, which the receiver drops, and settles it.
func TestDiedBeforeSettleDeliversOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	c := &clock{t: t0}
	b := newInbox()
	b.crashAt = 1
	add(t, filestore.NewJobs(dir, 0), job("once", sessions.JobSchedule{At: t0.Add(2 * time.Second)}, t0))
	c.Set(t0.Add(2 * time.Second))
	tick(t, newScheduler(t, filestore.NewJobs(dir, 0), c, b, "first"))
	c.Set(t0.Add(2*time.Second + DefaultLease))
	restarted := filestore.NewJobs(dir, 0)
	tick(t, newScheduler(t, restarted, c, b, "second"))
	id := OccurrenceID("once", t0.Add(2*time.Second))
	if b.calls != 2 || b.got[id] != 2 || len(b.ids()) != 1 {
		t.Errorf("calls %d, deliveries of %s %d, distinct %v: want the repeat under the same id", b.calls, id, b.got[id], b.ids())
	}
	if j := getJob(t, restarted, "once"); j.State != sessions.JobDone || j.Fires != 1 {
		t.Errorf("after the restart: state %s fires %d", j.State, j.Fires)
	}
}
