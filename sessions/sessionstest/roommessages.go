package sessionstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// RoomMessagesOpener returns a new, empty record, or with share (a record
// it returned earlier) a second handle on share's storage, as the next
// start of the daemon (or another replica) would open it. It releases what
// it opened when t ends.
type RoomMessagesOpener func(t *testing.T, share sessions.RoomMessages) sessions.RoomMessages

// TestRoomMessages runs the conformance suite of sessions.RoomMessages
// against the records open returns, as parallel subtests.
func TestRoomMessages(t *testing.T, open RoomMessagesOpener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open RoomMessagesOpener)
	}{
		{"SeenAndOwn", testRoomMessagesOwn},
		{"RoomsApart", testRoomMessagesRooms},
		{"KeepsNewest", testRoomMessagesKeep},
		{"Reopen", testRoomMessagesReopen},
		{"Forget", testRoomMessagesForget},
		{"RefusedInput", testRoomMessagesRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

func roomCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func noteMsgs(t *testing.T, r sessions.RoomMessages, room string, msgs ...sessions.RoomMessage) {
	t.Helper()
	if err := r.NoteMessages(roomCtx(t), room, msgs); err != nil {
		t.Fatalf("NoteMessages(%q, %d messages): %v", room, len(msgs), err)
	}
}

// wantMsg fails unless r knows id in room (ok) with own, or does not know it.
func wantMsg(t *testing.T, r sessions.RoomMessages, room, id string, ok, own bool) {
	t.Helper()
	m, found, err := r.RoomMessage(roomCtx(t), room, id)
	if err != nil || found != ok || (ok && (m.Own != own || m.ID != id)) {
		t.Errorf("RoomMessage(%q, %q) = %+v, %v, %v; want found %v, own %v", room, id, m, found, err, ok, own)
	}
}

func testRoomMessagesOwn(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	room := "telegram/default/-100123/topic:5"
	wantMsg(t, r, room, "7", false, false)
	noteMsgs(t, r, room, sessions.RoomMessage{ID: "7", At: time.Now()}, sessions.RoomMessage{ID: "8", Own: true})
	wantMsg(t, r, room, "7", true, false)
	wantMsg(t, r, room, "8", true, true)
	// Noted again as seen: still the bot's. A seen id later sent by the
	// bot (a draft id reused) becomes its own. Duplicates in one call.
	noteMsgs(t, r, room, sessions.RoomMessage{ID: "8"}, sessions.RoomMessage{ID: "7", Own: true}, sessions.RoomMessage{ID: "7"})
	wantMsg(t, r, room, "8", true, true)
	wantMsg(t, r, room, "7", true, true)
	noteMsgs(t, r, room) // nothing: no error
	noteMsgs(t, r, room, sessions.RoomMessage{ID: "9"})
	wantLatest(t, r, room, false, "9")
	wantLatest(t, r, room, true, "8") // noted after 7, which became own later
	wantLatest(t, r, "empty", false, "")
	noteMsgs(t, r, "seen only", sessions.RoomMessage{ID: "1"})
	wantLatest(t, r, "seen only", true, "")
}

// wantLatest fails unless r's latest (own) message of room is id ("": none).
func wantLatest(t *testing.T, r sessions.RoomMessages, room string, own bool, id string) {
	t.Helper()
	m, ok, err := r.LatestMessage(roomCtx(t), room, own)
	if err != nil || ok != (id != "") || m.ID != id {
		t.Errorf("LatestMessage(%q, own %v) = %+v, %v, %v; want %q", room, own, m, ok, err, id)
	}
}

func testRoomMessagesRooms(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	rooms := []string{"a/b/c/", "a/b/c/1", "../x", "x'); DROP TABLE room_messages; --", "日本語", "A/b/c/"}
	for i, room := range rooms {
		noteMsgs(t, r, room, sessions.RoomMessage{ID: fmt.Sprint(i), Own: i%2 == 0})
	}
	for i, room := range rooms {
		for j := range rooms {
			wantMsg(t, r, room, fmt.Sprint(j), i == j, i%2 == 0)
		}
	}
}

func testRoomMessagesKeep(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	n := sessions.RoomMessagesKeep + 5
	msgs := make([]sessions.RoomMessage, 0, 100)
	for i := 0; i < n; i++ {
		msgs = append(msgs, sessions.RoomMessage{ID: fmt.Sprint(i), Own: true})
		if len(msgs) == cap(msgs) || i == n-1 {
			noteMsgs(t, r, "busy", msgs...)
			msgs = msgs[:0]
		}
	}
	noteMsgs(t, r, "quiet", sessions.RoomMessage{ID: "0", Own: true})
	for i := 0; i < 5; i++ {
		wantMsg(t, r, "busy", fmt.Sprint(i), false, false)
	}
	wantMsg(t, r, "busy", "5", true, true)
	wantMsg(t, r, "busy", fmt.Sprint(n-1), true, true)
	wantLatest(t, r, "busy", true, fmt.Sprint(n-1))
	wantMsg(t, r, "quiet", "0", true, true) // another room's turnover takes nothing
}

func testRoomMessagesReopen(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	noteMsgs(t, r, "room", sessions.RoomMessage{ID: "1"}, sessions.RoomMessage{ID: "2", Own: true})
	r2 := open(t, r)
	wantMsg(t, r2, "room", "1", true, false)
	wantMsg(t, r2, "room", "2", true, true)
	wantMsg(t, r2, "room", "3", false, false)
	noteMsgs(t, r2, "room", sessions.RoomMessage{ID: "1", Own: true})
	wantMsg(t, open(t, r2), "room", "1", true, true)
}

func testRoomMessagesRefused(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	ctx := roomCtx(t)
	long := string(make([]byte, 600))
	for _, c := range []struct{ room, id string }{{"", "1"}, {"room", ""}, {"room", "a\x00b"}, {"r\x00", "1"}, {"room", "\xff"}, {"room", "x" + long}} {
		if err := r.NoteMessages(ctx, c.room, []sessions.RoomMessage{{ID: c.id}}); err == nil {
			t.Errorf("NoteMessages(%q, %q) accepted", c.room, c.id)
		}
		if _, _, err := r.RoomMessage(ctx, c.room, c.id); err == nil {
			t.Errorf("RoomMessage(%q, %q) accepted", c.room, c.id)
		}
	}
	// A refused call notes nothing of its batch.
	if err := r.NoteMessages(ctx, "room", []sessions.RoomMessage{{ID: "ok"}, {ID: ""}}); err == nil {
		t.Error("a batch with an empty id was accepted")
	}
	wantMsg(t, r, "room", "ok", false, false)
}

func testRoomMessagesForget(t *testing.T, open RoomMessagesOpener) {
	r := open(t, nil)
	noteMsgs(t, r, "room", sessions.RoomMessage{ID: "1", Own: true}, sessions.RoomMessage{ID: "2", Own: true}, sessions.RoomMessage{ID: "3"})
	noteMsgs(t, r, "other", sessions.RoomMessage{ID: "2", Own: true})
	if err := r.ForgetMessage(roomCtx(t), "room", "2"); err != nil {
		t.Fatal(err)
	}
	if err := r.ForgetMessage(roomCtx(t), "room", "never"); err != nil {
		t.Errorf("forgetting an unknown id: %v", err)
	}
	wantMsg(t, r, "room", "2", false, false)
	wantMsg(t, r, "other", "2", true, true) // another room's 2 stays
	wantLatest(t, r, "room", true, "1")     // the deleted newest no longer counts
	wantLatest(t, r, "room", false, "3")
	r2 := open(t, r)
	wantMsg(t, r2, "room", "2", false, false)
	wantLatest(t, r2, "room", true, "1")
	// Noted again (an id reused by the platform): known again.
	noteMsgs(t, r2, "room", sessions.RoomMessage{ID: "2"})
	wantMsg(t, r2, "room", "2", true, false)
	if err := r2.ForgetMessage(roomCtx(t), "", "2"); err == nil {
		t.Error("ForgetMessage with an empty room accepted")
	}
}
