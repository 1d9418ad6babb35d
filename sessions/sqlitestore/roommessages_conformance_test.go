package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestRoomMessagesConformance(t *testing.T) {
	var f files[sessions.RoomMessages]
	sessionstest.TestRoomMessages(t, func(t *testing.T, share sessions.RoomMessages) sessions.RoomMessages {
		db, path := f.open(t, share, nil)
		return f.keep(db.RoomMessages(), path)
	})
}
