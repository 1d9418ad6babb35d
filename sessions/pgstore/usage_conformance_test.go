package pgstore

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestUsageConformance runs the usage ledger suite against PostgreSQL.
func TestUsageConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.UsageLog]{urls: map[sessions.UsageLog]string{}}
	sessionstest.TestUsage(t, func(t *testing.T, share sessions.UsageLog) sessions.UsageLog {
		db, remember := dbs.open(t, share, share == nil)
		u := db.Usage()
		remember(u)
		return u
	})
}
