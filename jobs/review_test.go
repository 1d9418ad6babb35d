package jobs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestDailyNineAcrossDSTBothZones: "every day at 09:00" in Europe/Berlin
// and in America/New_York, polled every five minutes on a fake clock over
// the spring-forward and fall-back weeks of 2026, fires exactly once a
// day, at 09:00 local, never twice and never not at all.
func TestDailyNineAcrossDSTBothZones(t *testing.T) {
	for _, c := range []struct {
		zone           string
		spring, autumn time.Time // a day before each change
	}{
		{"Europe/Berlin", time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC), time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2026, 3, 6, 18, 0, 0, 0, time.UTC), time.Date(2026, 10, 30, 18, 0, 0, 0, time.UTC)},
	} {
		t.Run(c.zone, func(t *testing.T) {
			loc, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			sched, text, err := ParseWhen("every day at 09:00 stand-up", c.spring, loc)
			if err != nil || text != "stand-up" {
				t.Fatalf("ParseWhen: %+v %q %v", sched, text, err)
			}
			for _, from := range []time.Time{c.spring, c.autumn} {
				clk := &clock{t: from}
				b := newInbox()
				store := filestore.NewJobs(t.TempDir(), 0)
				j, err := NewJob(Spec{AgentID: "main", SessionKey: "agent:main:telegram:group:-1", Text: text, Schedule: sched,
					Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-1"}}, from)
				if err != nil {
					t.Fatal(err)
				}
				add(t, store, j)
				s := newScheduler(t, store, clk, b, "a")
				for now := from; now.Before(from.AddDate(0, 0, 4)); now = now.Add(5 * time.Minute) {
					clk.Set(now)
					tick(t, s)
				}
				var got []string
				for _, id := range b.ids() {
					unix := id[strings.LastIndexByte(id, ':')+1:]
					var sec int64
					fmt.Sscan(unix, &sec)
					got = append(got, time.Unix(sec, 0).In(loc).Format("01-02 15:04"))
				}
				var want []string
				for d := 1; d <= 4; d++ {
					day := from.In(loc).AddDate(0, 0, d)
					want = append(want, day.Format("01-02")+" 09:00")
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("from %s: fired at %v, want %v", from.Format("01-02"), got, want)
				}
				for id, n := range b.got {
					if n != 1 {
						t.Errorf("%s delivered %d times", id, n)
					}
				}
			}
		})
	}
}

// TestRecurringMissedPeriodsFireOnce: a job every two minutes, its
// scheduler down for nine minutes (four occurrences, all within the grace
// window), fires once at start, for the latest occurrence, and notes the
// three before it; it then goes on from the next occurrence after now.
func TestRecurringMissedPeriodsFireOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	b := newInbox()
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("often", sessions.JobSchedule{Cron: "*/2 * * * *"}, t0))
	c.Set(t0.Add(9 * time.Minute)) // due 09:02, 09:04, 09:06, 09:08
	s := newScheduler(t, store, c, b, "a")
	tick(t, s)
	tick(t, s)
	if got := b.ids(); len(got) != 1 || got[0] != OccurrenceID("often", t0.Add(8*time.Minute)) {
		t.Fatalf("delivered %v, want the 09:08 occurrence once", got)
	}
	j := getJob(t, store, "often")
	if j.Fires != 1 || !j.NextAt.Equal(t0.Add(10*time.Minute)) || !strings.Contains(j.Note, "3 occurrences before") {
		t.Errorf("after the catch-up: fires %d next %v note %q", j.Fires, j.NextAt, j.Note)
	}
}

// cancelOnClaim is a store whose claimed jobs are removed right after the
// claim, as a /remind cancel landing while the scheduler fires its batch.
type cancelOnClaim struct {
	sessions.Jobs
}

func (c cancelOnClaim) ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, n int) ([]sessions.Job, time.Time, error) {
	claimed, next, err := c.Jobs.ClaimDueJobs(ctx, now, owner, lease, n)
	for _, j := range claimed {
		if err := c.Jobs.RemoveJob(ctx, j.ID); err != nil {
			return nil, time.Time{}, err
		}
	}
	return claimed, next, err
}

// TestCancelledWhileFiringIsNotDelivered: a job cancelled after the
// scheduler claimed it but before it delivered it (the user was told
// "Cancelled") is not delivered, and stays gone.
func TestCancelledWhileFiringIsNotDelivered(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	b := newInbox()
	files := filestore.NewJobs(t.TempDir(), 0)
	add(t, files, job("once", sessions.JobSchedule{At: t0.Add(time.Minute)}, t0))
	add(t, files, job("daily", sessions.JobSchedule{Cron: "1 9 * * *"}, t0))
	c.Set(t0.Add(time.Minute))
	tick(t, newScheduler(t, cancelOnClaim{files}, c, b, "a"))
	if b.calls != 0 {
		t.Errorf("%d deliveries of jobs cancelled before they fired: %v", b.calls, b.ids())
	}
	if js, err := files.ListJobs(context.Background(), sessions.JobFilter{}); err != nil || len(js) != 0 {
		t.Errorf("jobs after the cancel: %+v, %v; want none (a settle must not bring one back)", js, err)
	}
}

// TestCancelledAfterDeliveryStaysGone: a job removed after its occurrence
// was delivered and before the settle is not written back by the settle
// and is not delivered again.
func TestCancelledAfterDeliveryStaysGone(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("daily", sessions.JobSchedule{Cron: "1 9 * * *"}, t0))
	calls := 0
	s, err := New(Options{Store: store, Owner: "a", Now: c.Now, Deliver: func(ctx context.Context, j sessions.Job, at time.Time, id string) error {
		calls++
		return store.RemoveJob(ctx, j.ID) // the cancel lands while the delivery returns
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.Set(t0.Add(time.Minute))
	tick(t, s)
	c.Set(t0.Add(24*time.Hour + 2*time.Minute))
	tick(t, s)
	if calls != 1 {
		t.Errorf("%d deliveries, want the one before the cancel", calls)
	}
	if _, err := store.Job(context.Background(), "daily"); err == nil {
		t.Error("the settle brought the removed job back")
	}
}

// TestOneShotAcrossDST: "tomorrow 09:00" set the day before a DST change
// is 09:00 local on the day of the change (its UTC time an hour off the
// day before's), in both directions and both zones.
func TestOneShotAcrossDST(t *testing.T) {
	for _, c := range []struct {
		zone string
		set  time.Time // noon UTC the day before the change
		want string    // the UTC instant of 09:00 local on the day of the change
	}{
		{"Europe/Berlin", time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), "2026-03-29T07:00:00Z"},
		{"Europe/Berlin", time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), "2026-10-25T08:00:00Z"},
		{"America/New_York", time.Date(2026, 3, 7, 18, 0, 0, 0, time.UTC), "2026-03-08T13:00:00Z"},
		{"America/New_York", time.Date(2026, 10, 31, 18, 0, 0, 0, time.UTC), "2026-11-01T14:00:00Z"},
	} {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := ParseWhen("tomorrow 09:00 x", c.set, loc)
		if err != nil || got.At.Format(time.RFC3339) != c.want {
			t.Errorf("%s, set %s: tomorrow 09:00 = %v, %v; want %s", c.zone, c.set.Format("01-02"), got.At, err, c.want)
		}
	}
}
