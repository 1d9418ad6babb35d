package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// RoomGoneKeep is how many removed (taken or evicted) entries with a
// message id are remembered, so a platform's redelivery of one is not kept
// a second time (the files backend remembers as many).
const RoomGoneKeep = 8192

// roomLockSpace is the first key of the per-room advisory locks ("room").
const roomLockSpace = 0x726f6f6d

// roomPruneEvery is how many cuts pass between prunes of removed entries.
const roomPruneEvery = 64

// RoomLogOptions configure DB.RoomLog.
type RoomLogOptions struct {
	// Logger receives failures of methods that return no error; nil means
	// the DB's.
	Logger *zap.Logger
}

// RoomLog is the room history of group rooms (sessions.RoomHistory's
// semantics) on PostgreSQL: one row per kept message in room_history,
// sequenced by one global sequence. Every write is one transaction that
// holds the room's advisory lock, so within a room sequence order is commit
// order: a Take that follows a Seq sees every entry up to it, and a Cut
// never removes an entry that was still being added when the Take ran.
// Append and Add are durable when they return (Add's wait has nothing left
// to do). Message ids and rooms are compared as bytes; names and texts are
// stored as the files log encodes them (JSON: NUL kept, invalid UTF-8
// replaced by U+FFFD).
//
// A RoomLog holds no state of its own besides counters: handles on one
// database (in one process or several) see the same history. It is safe
// for concurrent use.
type RoomLog struct {
	db  *DB
	log *zap.Logger

	appends, commits, cuts atomic.Int64
}

var _ sessions.RoomLog = (*RoomLog)(nil)

// RoomLog returns a handle on the room history.
func (db *DB) RoomLog(o RoomLogOptions) *RoomLog {
	log := o.Logger
	if log == nil {
		log = db.log.Named("history")
	}
	return &RoomLog{db: db, log: log}
}

// roomBody is an entry as the files log writes it (histLine's fields).
type roomBody struct {
	ID   string    `json:"id,omitempty"`
	From string    `json:"from,omitempty"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at,omitzero"`
	Text string    `json:"text,omitempty"`
}

// Append keeps e in room within lim, evicting the oldest entries beyond
// it, and returns once that is committed. A message id kept (or recently
// removed) in the room is a redelivery: dup is true and nothing is written.
// Text beyond lim.MaxBytes is cut on a rune boundary.
func (h *RoomLog) Append(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (bool, error) {
	dup, _, err := h.Add(ctx, room, e, lim)
	return dup, err
}

// Add is Append; its wait returns at once, the transaction having
// committed before Add returned.
func (h *RoomLog) Add(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (bool, func() error, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, fmt.Errorf("pgstore: history append: %w", err)
	}
	if lim.Count <= 0 || room == "" {
		return false, noWait, nil
	}
	if lim.MaxBytes > 0 && len(e.Text) > lim.MaxBytes {
		e.Text = truncUTF8(e.Text, lim.MaxBytes)
	}
	body, err := json.Marshal(roomBody{ID: e.MessageID, From: e.SenderID, Name: e.SenderName, At: e.At.UTC(), Text: e.Text})
	if err != nil {
		return false, nil, fmt.Errorf("pgstore: history append: %w", err)
	}
	var msgID []byte
	if e.MessageID != "" {
		msgID = []byte(e.MessageID)
	}
	dup := false
	err = h.inRoom(ctx, room, func(tx pgx.Tx) error {
		var seq int64
		err := tx.QueryRow(ctx, `INSERT INTO room_history (seq, room, message_id, at_ms, text_bytes, body)
			VALUES (nextval('room_history_seq'), $1, $2, $3, $4, $5)
			ON CONFLICT (room, message_id) WHERE message_id IS NOT NULL DO NOTHING RETURNING seq`,
			[]byte(room), msgID, e.At.UnixMilli(), len(e.Text), string(body)).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			dup = true
			return nil
		}
		if err != nil {
			return err
		}
		// The eviction this add causes commits with it.
		var cut *int64
		err = tx.QueryRow(ctx, `SELECT max(seq) FROM (
				SELECT seq, row_number() OVER w AS n, sum(text_bytes) OVER w AS b
				FROM room_history WHERE room = $1 AND gone_seq IS NULL
				WINDOW w AS (ORDER BY seq DESC)) k
			WHERE n > $2 OR ($3 > 0 AND b > $3)`, []byte(room), lim.Count, lim.MaxBytes).Scan(&cut)
		if err != nil || cut == nil {
			return err
		}
		return h.cutRows(ctx, tx, room, *cut)
	})
	if err != nil {
		return false, nil, fmt.Errorf("pgstore: history append: %w", err)
	}
	if !dup {
		h.appends.Add(1)
	}
	return dup, noWait, nil
}

func noWait() error { return nil }

// inRoom runs fn in a transaction holding room's advisory lock.
func (h *RoomLog) inRoom(ctx context.Context, room string, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, h.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, int32(roomLockSpace), roomLockKey(room)); err != nil {
			return err
		}
		return fn(tx)
	})
	if err == nil {
		h.commits.Add(1)
	}
	return err
}

// roomLockKey is room's advisory lock key (rooms sharing one only wait for
// each other).
func roomLockKey(room string) int32 {
	f := fnv.New32a()
	_, _ = f.Write([]byte(room))
	return int32(f.Sum32())
}

// cutRows removes room's kept entries up to seq upTo: entries without a
// message id go; the others stay as removed (gone_seq), for redelivery
// detection, until they are pruned.
func (h *RoomLog) cutRows(ctx context.Context, tx pgx.Tx, room string, upTo int64) error {
	r := []byte(room)
	if _, err := tx.Exec(ctx, `DELETE FROM room_history
		WHERE room = $1 AND gone_seq IS NULL AND seq <= $2 AND message_id IS NULL`, r, upTo); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE room_history SET gone_seq = nextval('room_history_gone_seq'), body = '{}'
		WHERE room = $1 AND gone_seq IS NULL AND seq <= $2`, r, upTo)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	if h.cuts.Add(1)%roomPruneEvery != 0 {
		return nil
	}
	_, err = tx.Exec(ctx, `DELETE FROM room_history WHERE gone_seq <= (
		SELECT gone_seq FROM room_history WHERE gone_seq IS NOT NULL
		ORDER BY gone_seq DESC OFFSET $1 LIMIT 1)`, RoomGoneKeep)
	return err
}

// truncUTF8 cuts s to at most n bytes on a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
