package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// roomMessages implements sessions.RoomMessages on the room_messages
// table: one row per (room, message id); a note is one writer job (the
// upserts and the trim of the room to its newest
// sessions.RoomMessagesKeep rows).
type roomMessages struct{ db *DB }

var _ sessions.RoomMessages = roomMessages{}

// RoomMessages returns the message tool's record of the rooms' messages.
func (db *DB) RoomMessages() sessions.RoomMessages { return roomMessages{db} }

// NoteMessages implements sessions.RoomMessages.
func (r roomMessages) NoteMessages(ctx context.Context, room string, msgs []sessions.RoomMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	var errs []error
	for _, m := range msgs {
		if err := sessions.CheckRoomMessage(room, m.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	now := r.db.clock()
	err := r.db.w.do(ctx, func(tx *wtx) error {
		for _, m := range msgs {
			at := m.At.UTC()
			if m.At.IsZero() {
				at = now
			}
			if _, err := tx.Exec(`INSERT INTO room_messages (room, message_id, own, at) VALUES (?, ?, ?, ?)
				ON CONFLICT (room, message_id) DO UPDATE SET own = own OR excluded.own`, room, m.ID, m.Own, toNanos(at)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(`DELETE FROM room_messages WHERE room = ?1 AND seq <=
			(SELECT seq FROM room_messages WHERE room = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)`, room, sessions.RoomMessagesKeep)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: note room messages: %w", err)
	}
	return nil
}

// RoomMessage implements sessions.RoomMessages.
func (r roomMessages) RoomMessage(ctx context.Context, room, id string) (sessions.RoomMessage, bool, error) {
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	m := sessions.RoomMessage{ID: id}
	var at int64
	err := r.db.read.QueryRowContext(ctx, `SELECT own, at FROM room_messages WHERE room = ? AND message_id = ?`, room, id).Scan(&m.Own, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.RoomMessage{}, false, nil
	}
	if err != nil {
		return sessions.RoomMessage{}, false, fmt.Errorf("sqlitestore: room message: %w", storageErr(err))
	}
	m.At = fromNanos(at)
	return m, true, nil
}

// ForgetMessage implements sessions.RoomMessages.
func (r roomMessages) ForgetMessage(ctx context.Context, room, id string) error {
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return err
	}
	err := r.db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`DELETE FROM room_messages WHERE room = ? AND message_id = ?`, room, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: forget room message: %w", err)
	}
	return nil
}

// LatestMessage implements sessions.RoomMessages.
func (r roomMessages) LatestMessage(ctx context.Context, room string, own bool) (sessions.RoomMessage, bool, error) {
	if err := sessions.CheckRoomMessage(room, "-"); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	var (
		m  sessions.RoomMessage
		at int64
	)
	err := r.db.read.QueryRowContext(ctx, `SELECT message_id, own, at FROM room_messages WHERE room = ? AND (own OR NOT ?)
		ORDER BY seq DESC LIMIT 1`, room, own).Scan(&m.ID, &m.Own, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.RoomMessage{}, false, nil
	}
	if err != nil {
		return sessions.RoomMessage{}, false, fmt.Errorf("sqlitestore: latest room message: %w", storageErr(err))
	}
	m.At = fromNanos(at)
	return m, true, nil
}
