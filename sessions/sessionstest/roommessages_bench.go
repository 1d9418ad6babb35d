package sessionstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// BenchRoomMessages measures what the message tool's record costs a turn
// of an agent that offers the tool, in a room already holding
// sessions.RoomMessagesKeep messages (so each note also forgets the
// oldest): Note (the turn's inbound id, or a delivered reply's id), Lookup
// (the check before a react/reply/edit/delete) and Latest (an edit or
// delete without messageId). Each backend calls it from a benchmark of its
// own, so the figures line up side by side.
func BenchRoomMessages(b *testing.B, r sessions.RoomMessages) {
	ctx := context.Background()
	const room = "telegram/default/-100123/"
	batch := make([]sessions.RoomMessage, 0, 100)
	for i := range sessions.RoomMessagesKeep {
		batch = append(batch, sessions.RoomMessage{ID: fmt.Sprint(i), Own: i%3 == 0})
		if len(batch) == cap(batch) {
			if err := r.NoteMessages(ctx, room, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	next := sessions.RoomMessagesKeep
	b.Run("Note", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next++
			if err := r.NoteMessages(ctx, room, []sessions.RoomMessage{{ID: fmt.Sprint(next), Own: true}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		id := fmt.Sprint(next)
		for b.Loop() {
			if _, ok, err := r.RoomMessage(ctx, room, id); err != nil || !ok {
				b.Fatalf("RoomMessage = %v, %v", ok, err)
			}
		}
	})
	b.Run("Latest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := r.LatestMessage(ctx, room, true); err != nil || !ok {
				b.Fatalf("LatestMessage = %v, %v", ok, err)
			}
		}
	})
}
