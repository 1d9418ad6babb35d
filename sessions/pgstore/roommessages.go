package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// roomMessages implements sessions.RoomMessages on the room_messages table
// (migration 00007): one row per (room, message id). A note is one round
// trip (a batch: the upsert and the trim of the room to its newest
// sessions.RoomMessagesKeep rows), committed lazily (lazy.go: like the
// files backend's unsynced write, only a crash of the server within
// wal_writer_delay can lose it); a lookup is one primary-key read.
type roomMessages struct{ db *DB }

// RoomMessages returns the message tool's record of the rooms' messages.
func (db *DB) RoomMessages() sessions.RoomMessages { return roomMessages{db} }

// NoteMessages implements sessions.RoomMessages.
func (r roomMessages) NoteMessages(ctx context.Context, room string, msgs []sessions.RoomMessage) error {
	ctx = withOp(ctx, OpRooms)
	if len(msgs) == 0 {
		return nil
	}
	idx := map[string]int{}
	var (
		ids  []string
		own  []bool
		ats  []time.Time
		now  = r.db.clock()
		errs []error
	)
	for _, m := range msgs {
		if err := sessions.CheckRoomMessage(room, m.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		at := m.At.UTC().Truncate(time.Microsecond)
		if m.At.IsZero() {
			at = now
		}
		if i, ok := idx[m.ID]; ok { // one row per id in a statement
			own[i] = own[i] || m.Own
			continue
		}
		idx[m.ID] = len(ids)
		ids, own, ats = append(ids, m.ID), append(own, m.Own), append(ats, at)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	err := r.db.lazyBatch(ctx, func(b *pgx.Batch) {
		b.Queue(`INSERT INTO room_messages (room, message_id, own, at)
		SELECT $1, t.id, t.own, t.at FROM unnest($2::text[], $3::boolean[], $4::timestamptz[]) AS t(id, own, at)
		ON CONFLICT (room, message_id) DO UPDATE SET own = room_messages.own OR excluded.own`, room, ids, own, ats)
		b.Queue(`DELETE FROM room_messages WHERE room = $1 AND seq <=
		(SELECT seq FROM room_messages WHERE room = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`, room, sessions.RoomMessagesKeep)
	})
	if err != nil {
		return fmt.Errorf("pgstore: note room messages: %w", err)
	}
	return nil
}

// RoomMessage implements sessions.RoomMessages.
func (r roomMessages) RoomMessage(ctx context.Context, room, id string) (sessions.RoomMessage, bool, error) {
	ctx = withOp(ctx, OpRooms)
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	m := sessions.RoomMessage{ID: id}
	err := r.db.pool.QueryRow(ctx, `SELECT own, at FROM room_messages WHERE room = $1 AND message_id = $2`, room, id).Scan(&m.Own, &m.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.RoomMessage{}, false, nil
	}
	if err != nil {
		return sessions.RoomMessage{}, false, fmt.Errorf("pgstore: room message: %w", err)
	}
	return m, true, nil
}

// ForgetMessage implements sessions.RoomMessages (committed lazily).
func (r roomMessages) ForgetMessage(ctx context.Context, room, id string) error {
	ctx = withOp(ctx, OpRooms)
	if err := sessions.CheckRoomMessage(room, id); err != nil {
		return err
	}
	err := r.db.lazyBatch(ctx, func(b *pgx.Batch) {
		b.Queue(`DELETE FROM room_messages WHERE room = $1 AND message_id = $2`, room, id)
	})
	if err != nil {
		return fmt.Errorf("pgstore: forget room message: %w", err)
	}
	return nil
}

// LatestMessage implements sessions.RoomMessages.
func (r roomMessages) LatestMessage(ctx context.Context, room string, own bool) (sessions.RoomMessage, bool, error) {
	ctx = withOp(ctx, OpRooms)
	if err := sessions.CheckRoomMessage(room, "-"); err != nil {
		return sessions.RoomMessage{}, false, err
	}
	var m sessions.RoomMessage
	err := r.db.pool.QueryRow(ctx, `SELECT message_id, own, at FROM room_messages WHERE room = $1 AND (own OR NOT $2)
		ORDER BY seq DESC LIMIT 1`, room, own).Scan(&m.ID, &m.Own, &m.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.RoomMessage{}, false, nil
	}
	if err != nil {
		return sessions.RoomMessage{}, false, fmt.Errorf("pgstore: latest room message: %w", err)
	}
	return m, true, nil
}

var _ sessions.RoomMessages = roomMessages{}
