package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestRoomLogConformance(t *testing.T) {
	var f files[sessions.RoomLog]
	sessionstest.TestRoomLog(t, func(t *testing.T, o sessionstest.RoomLogOptions) (sessions.RoomLog, func() error) {
		db, path := f.open(t, o.Share, nil)
		return f.keep(db.RoomLog(), path), func() error { return nil }
	})
}
