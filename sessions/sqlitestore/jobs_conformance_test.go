package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestJobsConformance(t *testing.T) {
	var f files[sessions.Jobs]
	sessionstest.TestJobs(t, func(t *testing.T, share sessions.Jobs) sessions.Jobs {
		db, path := f.open(t, share, nil)
		return f.keep(db.Jobs(), path)
	})
}
