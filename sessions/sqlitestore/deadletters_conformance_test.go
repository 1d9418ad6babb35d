package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestDeadLettersConformance(t *testing.T) {
	var f files[sessions.DeadLetters]
	sessionstest.TestDeadLetters(t, func(t *testing.T, share sessions.DeadLetters) sessions.DeadLetters {
		db, path := f.open(t, share, nil)
		return f.keep(db.DeadLetters(), path)
	})
}

func TestLimitsConformance(t *testing.T) {
	var f files[sessions.LimitCounters]
	sessionstest.TestLimits(t, func(t *testing.T, share sessions.LimitCounters) sessions.LimitCounters {
		db, path := f.open(t, share, nil)
		return f.keep(db.Limits(), path)
	})
}
