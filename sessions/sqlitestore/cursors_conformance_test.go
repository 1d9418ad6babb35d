package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestCursorsConformance(t *testing.T) {
	var f files[sessions.Cursors]
	sessionstest.TestCursors(t, func(t *testing.T, share sessions.Cursors) sessions.Cursors {
		db, path := f.open(t, share, nil)
		return f.keep(db.Cursors(), path)
	})
}
