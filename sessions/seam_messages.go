package sessions

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// RoomMessages records which platform messages of a chat room the gateway
// has seen and which of them the bot sent itself, for the agents' message
// tool (issue 14): it may react to or reply to a message the gateway has
// seen in the turn's room, and edit or delete only one the bot sent there.
// A room is an opaque string the caller builds (channel, account, chat and
// thread or topic); message ids are the platform's. Each room keeps its
// RoomMessagesKeep most recently (first) noted messages; older ones are forgotten
// (the tool then calls them unknown). Implementations are safe for
// concurrent use (filestore.RoomMessages, pgstore.DB.RoomMessages).
type RoomMessages interface {
	// NoteMessages records msgs in room. Noting an id again keeps it; Own
	// is never taken back (a message the bot sent stays the bot's).
	NoteMessages(ctx context.Context, room string, msgs []RoomMessage) error
	// RoomMessage returns what room's record says of message id; false
	// when the id was never noted there (or was forgotten).
	RoomMessage(ctx context.Context, room, id string) (RoomMessage, bool, error)
	// LatestMessage returns the message of room noted first most recently,
	// among the bot's own when own is true; false when there is none.
	LatestMessage(ctx context.Context, room string, own bool) (RoomMessage, bool, error)
	// ForgetMessage drops message id from room's record (the bot deleted
	// it): it is unknown from then on. Forgetting an unknown id is no error.
	ForgetMessage(ctx context.Context, room, id string) error
}

// RoomMessage is one platform message of a room.
type RoomMessage struct {
	ID string `json:"id"`
	// Own marks a message the bot sent (a reply chunk, a message tool
	// reply); others are messages the gateway received.
	Own bool      `json:"own,omitempty"`
	At  time.Time `json:"at"`
}

// RoomMessagesKeep is how many messages each room's record keeps.
const RoomMessagesKeep = 1000

// maxRoomField bounds a room or message id (bytes).
const maxRoomField = 512

// CheckRoomMessage reports what is wrong with a room or message id: empty,
// too long, not UTF-8 or holding a NUL.
func CheckRoomMessage(room, id string) error {
	for _, f := range []struct{ name, v string }{{"room", room}, {"message id", id}} {
		switch {
		case f.v == "":
			return fmt.Errorf("sessions: room messages: empty %s", f.name)
		case len(f.v) > maxRoomField:
			return fmt.Errorf("sessions: room messages: %s longer than %d bytes", f.name, maxRoomField)
		case !utf8.ValidString(f.v):
			return fmt.Errorf("sessions: room messages: %s is not UTF-8", f.name)
		}
		for i := 0; i < len(f.v); i++ {
			if f.v[i] == 0 {
				return fmt.Errorf("sessions: room messages: %s holds a NUL byte", f.name)
			}
		}
	}
	return nil
}
