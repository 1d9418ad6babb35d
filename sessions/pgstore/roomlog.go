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

// RoomLog is the room history of group rooms (filestore.RoomHistory's
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
	ctx = withOp(ctx, OpRooms)
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
	// One round trip: the transaction, the room's lock, the insert and the
	// eviction it causes travel as one batch.
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(roomLockSQL, int32(roomLockSpace), roomLockKey(room))
	b.Queue(`INSERT INTO room_history (seq, room, message_id, at_ms, text_bytes, body)
		VALUES (nextval('room_history_seq'), $1, $2, $3, $4, $5)
		ON CONFLICT (room, message_id) WHERE message_id IS NOT NULL DO NOTHING RETURNING seq`,
		[]byte(room), msgID, e.At.UnixMilli(), len(e.Text), string(body))
	b.Queue(evictSQL, []byte(room), lim.Count, lim.MaxBytes)
	b.Queue(`COMMIT`)
	dup, cut, err := h.sendAdd(ctx, b)
	if err != nil {
		return false, nil, fmt.Errorf("pgstore: history append: %w", err)
	}
	h.commits.Add(1)
	if !dup {
		h.appends.Add(1)
	}
	if cut {
		h.cutDone(ctx)
	}
	return dup, noWait, nil
}

// sendAdd runs Add's batch: dup when the insert found the message id
// kept or remembered; cut when the eviction removed entries.
func (h *RoomLog) sendAdd(ctx context.Context, b *pgx.Batch) (dup, cut bool, err error) {
	br := h.db.pool.SendBatch(ctx, b)
	defer func() {
		// Close repeats a statement's error; it adds news only on success.
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range 2 { // BEGIN, lock
		if _, err := br.Exec(); err != nil {
			return false, false, err
		}
	}
	var seq int64
	if err := br.QueryRow().Scan(&seq); errors.Is(err, pgx.ErrNoRows) {
		dup = true
	} else if err != nil {
		return false, false, err
	}
	var evicted int64
	if err := br.QueryRow().Scan(&evicted); err != nil {
		return false, false, err
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return false, false, err
	}
	return dup, evicted > 0, nil
}

func noWait() error { return nil }

// inRoom runs fn in a transaction holding room's advisory lock.
func (h *RoomLog) inRoom(ctx context.Context, room string, fn func(tx pgx.Tx) error) error {
	ctx = withOp(ctx, OpRooms)
	err := pgx.BeginFunc(ctx, h.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, roomLockSQL, int32(roomLockSpace), roomLockKey(room)); err != nil {
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

// roomLockSQL takes a room's advisory lock until the transaction ends.
const roomLockSQL = `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`

// cutSQL removes room $1's kept entries up to seq $2: entries without a
// message id go; the others stay as removed (gone_seq), for redelivery
// detection, until they are pruned. The two sets are disjoint, so one
// statement does both.
const cutSQL = `WITH del AS (DELETE FROM room_history
		WHERE room = $1 AND gone_seq IS NULL AND seq <= $2 AND message_id IS NULL RETURNING 1),
	upd AS (UPDATE room_history SET gone_seq = nextval('room_history_gone_seq'), body = '{}'
		WHERE room = $1 AND gone_seq IS NULL AND seq <= $2 AND message_id IS NOT NULL RETURNING 1)
	SELECT (SELECT count(*) FROM del) + (SELECT count(*) FROM upd)`

// evictSQL is cutSQL up to the newest entry of room $1 beyond the limits
// (count $2, bytes $3 when > 0), counted from the newest: the oldest
// entries go first. It evicts only after an insert of this session's
// transaction (currval is the sequence number just drawn; on a duplicate
// no row has it), so a redelivery changes nothing.
const evictSQL = `WITH lim AS (
		SELECT max(seq) AS upto FROM (
			SELECT seq, row_number() OVER w AS n, sum(text_bytes) OVER w AS b
			FROM room_history WHERE room = $1 AND gone_seq IS NULL
			WINDOW w AS (ORDER BY seq DESC)) k
		WHERE (n > $2 OR ($3 > 0 AND b > $3))
			AND EXISTS (SELECT 1 FROM room_history WHERE seq = currval('room_history_seq'))),
	del AS (DELETE FROM room_history
		WHERE room = $1 AND gone_seq IS NULL AND message_id IS NULL AND seq <= (SELECT upto FROM lim) RETURNING 1),
	upd AS (UPDATE room_history SET gone_seq = nextval('room_history_gone_seq'), body = '{}'
		WHERE room = $1 AND gone_seq IS NULL AND message_id IS NOT NULL AND seq <= (SELECT upto FROM lim) RETURNING 1)
	SELECT (SELECT count(*) FROM del) + (SELECT count(*) FROM upd)`

// cutRows runs cutSQL in tx and returns how many entries it removed.
func cutRows(ctx context.Context, tx pgx.Tx, room string, upTo int64) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, cutSQL, []byte(room), upTo).Scan(&n)
	return n, err
}

// cutDone counts a cut and every roomPruneEvery cuts forgets removed
// entries beyond the newest RoomGoneKeep.
func (h *RoomLog) cutDone(ctx context.Context) {
	ctx = withOp(ctx, OpRooms)
	if h.cuts.Add(1)%roomPruneEvery != 0 {
		return
	}
	if _, err := h.db.pool.Exec(ctx, `DELETE FROM room_history WHERE gone_seq <= (
		SELECT gone_seq FROM room_history WHERE gone_seq IS NOT NULL
		ORDER BY gone_seq DESC OFFSET $1 LIMIT 1)`, RoomGoneKeep); err != nil {
		h.log.Warn("history prune failed", zap.Error(err))
	}
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
