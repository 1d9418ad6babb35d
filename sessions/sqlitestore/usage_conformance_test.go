package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestUsageConformance(t *testing.T) {
	var f files[sessions.UsageLog]
	sessionstest.TestUsage(t, func(t *testing.T, share sessions.UsageLog) sessions.UsageLog {
		db, path := f.open(t, share, nil)
		return f.keep(db.Usage(), path)
	})
}
