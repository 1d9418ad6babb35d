package pgstore

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestRoomMessagesConformance runs the room messages suite against
// PostgreSQL (a second handle is a second pool on the same database).
func TestRoomMessagesConformance(t *testing.T) {
	pgtest.AdminURL(t)
	dbs := &sharedDBs[sessions.RoomMessages]{urls: map[sessions.RoomMessages]string{}}
	sessionstest.TestRoomMessages(t, func(t *testing.T, share sessions.RoomMessages) sessions.RoomMessages {
		db, remember := dbs.open(t, share, share == nil)
		r := db.RoomMessages()
		remember(r)
		return r
	})
}

// BenchmarkRoomMessages is sessionstest.BenchRoomMessages on PostgreSQL
// (the files figures: BenchmarkRoomMessages in package sessions).
func BenchmarkRoomMessages(b *testing.B) {
	sessionstest.BenchRoomMessages(b, openBench(b, 4).RoomMessages())
}
