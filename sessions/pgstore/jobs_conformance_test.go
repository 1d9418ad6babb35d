package pgstore

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestJobsConformance runs the scheduled jobs suite against PostgreSQL; a
// second handle is a second pool on the same database, as another replica
// would open it.
func TestJobsConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.Jobs]{urls: map[sessions.Jobs]string{}}
	sessionstest.TestJobs(t, func(t *testing.T, share sessions.Jobs) sessions.Jobs {
		db, remember := dbs.open(t, share, share == nil)
		s := db.Jobs()
		remember(s)
		return s
	})
}

// A scheduler's poll is one round trip: the claim and the next due time
// in one statement (it runs every second on every replica).
func TestClaimDueJobsOneRoundTrip(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	s := db.Jobs()
	ctx := ctxT(t)
	j := sessions.Job{ID: "j1", AgentID: "main", SessionKey: "agent:main:telegram:group:-100",
		Target: sessions.JobTarget{Channel: "telegram", AccountID: "default", ChatID: "-100", ChatType: "group"},
		Text:   "hi", Schedule: sessions.JobSchedule{At: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)},
		State: sessions.JobActive, NextAt: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), CreatedAt: time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)}
	if err := s.AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{j.NextAt.Add(-time.Minute), j.NextAt} {
		before := opCounts(db, OpJobs)[OpJobs]
		js, next, err := s.ClaimDueJobs(ctx, at, "me", time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		after := opCounts(db, OpJobs)[OpJobs]
		if got := [2]int64{after[0] - before[0], after[1] - before[1]}; got != [2]int64{1, 1} {
			t.Errorf("a poll at %v (%d claimed, next %v) cost %v round trips and commits, want [1 1]", at, len(js), next, got)
		}
	}
}
