package pgstore

import (
	"testing"

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
