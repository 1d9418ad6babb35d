package jobs

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestHourlyAcrossDSTFiresOncePerRealHour: a job that fires every hour
// ("every hour", "30 * * * *", "*/20 * * * *") in Europe/Berlin runs on
// real time across both DST changes, as cron runs wildcard-hour jobs: on
// 2026-10-25 the repeated 02:00-03:00 fires in both its real hours (the
// wall-clock rule skipped the second, a two-hour gap), and on 2026-03-29
// a skipped 02:30 is not moved to 03:00 (which fired twice within the
// real hour, 03:00 and 03:30).
func TestHourlyAcrossDSTFiresOncePerRealHour(t *testing.T) {
	cases := []struct {
		cron  string
		from  time.Time
		every time.Duration
	}{
		{"0 * * * *", time.Date(2026, 10, 24, 22, 10, 0, 0, time.UTC), time.Hour},
		{"30 * * * *", time.Date(2026, 10, 24, 22, 10, 0, 0, time.UTC), time.Hour},
		{"*/20 * * * *", time.Date(2026, 10, 24, 22, 10, 0, 0, time.UTC), 20 * time.Minute},
		{"0 * * * *", time.Date(2026, 3, 28, 23, 10, 0, 0, time.UTC), time.Hour},
		{"30 * * * *", time.Date(2026, 3, 28, 23, 10, 0, 0, time.UTC), time.Hour},
	}
	for _, c := range cases {
		s := sessions.JobSchedule{Cron: c.cron, TZ: "Europe/Berlin"}
		prev, err := Next(s, c.from)
		if err != nil {
			t.Fatal(err)
		}
		for range 6 * int(time.Hour/c.every) {
			at, err := Next(s, prev)
			if err != nil {
				t.Fatal(err)
			}
			if at.Sub(prev) != c.every {
				t.Errorf("%q from %s: %s follows %s (%s apart, want %s)", c.cron, c.from.Format(time.DateOnly), at, prev, at.Sub(prev), c.every)
			}
			prev = at
		}
	}
}

// TestEveryHourOnFallBackNight: "every hour" in Europe/Berlin, the
// scheduler ticking every five minutes through the fall-back night
// (20:00 UTC to 06:00 UTC, ten real hours): ten deliveries, one per real
// hour.
func TestEveryHourOnFallBackNight(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 10, 24, 19, 55, 0, 0, time.UTC)
	sched, _, err := ParseWhen("every hour check the mail", start, berlin)
	if err != nil {
		t.Fatal(err)
	}
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, job("jhourly", sched, start))
	clk := &clock{t: start}
	b := newInbox()
	s, err := New(Options{Store: store, Deliver: b.deliver, Owner: "a", Now: clk.Now, Grace: time.Hour, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for now := start; now.Before(time.Date(2026, 10, 25, 5, 59, 0, 0, time.UTC)); now = now.Add(5 * time.Minute) {
		clk.Set(now)
		tick(t, s)
	}
	if ids := b.ids(); len(ids) != 10 {
		t.Errorf("the hourly job was delivered %d times over ten real hours: %v", len(ids), ids)
	}
}
