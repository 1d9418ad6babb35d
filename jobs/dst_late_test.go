package jobs

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestLateOnFallBackFiresOnce: "30 2 * * *" in Europe/Berlin on the day
// 02:00-03:00 happens twice (2026-10-25). The gateway was down over the
// first 02:30 (CEST) and starts at 02:05 CET, within a grace window of
// an hour: the occurrence fires once, late, and the job's next occurrence
// is the next day's 02:30, not the second 02:30 of the same day (which
// would deliver the daily job twice).
func TestLateOnFallBackFiresOnce(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	sched := sessions.JobSchedule{Cron: "30 2 * * *", TZ: "Europe/Berlin"}
	created := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)
	j := job("jfall", sched, created)
	if want := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC); !j.NextAt.Equal(want) { // 02:30 CEST
		t.Fatalf("first occurrence %s, want %s", j.NextAt, want)
	}
	store := filestore.NewJobs(t.TempDir(), 0)
	add(t, store, j)
	clk := &clock{t: time.Date(2026, 10, 25, 1, 5, 0, 0, time.UTC)} // 02:05 CET, 35 min late
	b := newInbox()
	s, err := New(Options{Store: store, Deliver: b.deliver, Owner: "a", Now: clk.Now, Grace: time.Hour, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	tick(t, s)
	got := getJob(t, store, "jfall")
	want := time.Date(2026, 10, 26, 2, 30, 0, 0, berlin)
	if !got.NextAt.Equal(want) {
		t.Errorf("after the late fire the next occurrence is %s, want %s", got.NextAt.In(berlin), want)
	}
	for now := clk.Now(); now.Before(time.Date(2026, 10, 25, 12, 0, 0, 0, time.UTC)); now = now.Add(5 * time.Minute) {
		clk.Set(now)
		tick(t, s)
	}
	if ids := b.ids(); len(ids) != 1 {
		t.Errorf("the daily job was delivered %d times on the fall-back day: %v", len(ids), ids)
	}
}
