package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// RoomGoneKeep is how many removed (taken or evicted) entries with a
// message id are remembered, so a platform's redelivery of one is not kept
// a second time (the files backend remembers as many).
const RoomGoneKeep = 8192

// roomPruneEvery is how many cuts pass between prunes of removed entries.
const roomPruneEvery = 64

// roomOpTimeout bounds the methods without a context.
const roomOpTimeout = 30 * time.Second

// RoomLog is the room history of group rooms (filestore.RoomHistory's
// semantics) in the room_history table, sequenced by one global sequence.
// Every write is one writer job, so sequence order is commit order: a Take
// that follows a Seq sees every entry up to it. Append and Add are durable
// when they return. It holds no state besides counters and is safe for
// concurrent use.
type RoomLog struct {
	db  *DB
	log *zap.Logger

	appends, commits, cuts atomic.Int64
}

var (
	_ sessions.RoomLog    = (*RoomLog)(nil)
	_ sessions.RoomLister = (*RoomLog)(nil)
)

// RoomLog returns a handle on the room history.
func (db *DB) RoomLog() *RoomLog {
	return &RoomLog{db: db, log: db.log.Named("history")}
}

// roomBody is an entry as the files log writes it.
type roomBody struct {
	ID   string    `json:"id,omitempty"`
	From string    `json:"from,omitempty"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at,omitzero"`
	Text string    `json:"text,omitempty"`
}

func roomCall() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), roomOpTimeout)
}

// seqParam is a sequence number as an INTEGER (larger: everything).
func seqParam(s uint64) int64 {
	if s > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}

// nextSeq draws the next value of sequence name in tx.
func nextSeq(tx *wtx, name string) (int64, error) {
	var v int64
	err := tx.QueryRow(`UPDATE sequences SET value = value + 1 WHERE name = ? RETURNING value`, name).Scan(&v)
	return v, err
}

// Append keeps e in room within lim, evicting the oldest entries beyond
// it, and returns once that is committed. A message id kept (or recently
// removed) in the room is a redelivery: dup is true and nothing is
// written. Text beyond lim.MaxBytes is cut on a rune boundary.
func (h *RoomLog) Append(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (bool, error) {
	dup, _, err := h.Add(ctx, room, e, lim)
	return dup, err
}

// Add is Append; its wait returns at once, the write having committed
// before Add returned.
func (h *RoomLog) Add(ctx context.Context, room string, e sessions.HistoryEntry, lim sessions.HistoryLimits) (bool, func() error, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, fmt.Errorf("sqlitestore: history append: %w", err)
	}
	if lim.Count <= 0 || room == "" {
		return false, noWait, nil
	}
	if lim.MaxBytes > 0 && len(e.Text) > lim.MaxBytes {
		e.Text = truncUTF8(e.Text, lim.MaxBytes)
	}
	body, err := json.Marshal(roomBody{ID: e.MessageID, From: e.SenderID, Name: e.SenderName, At: e.At.UTC(), Text: e.Text})
	if err != nil {
		return false, nil, fmt.Errorf("sqlitestore: history append: %w", err)
	}
	var msgID any
	if e.MessageID != "" {
		msgID = []byte(e.MessageID)
	}
	var dup bool
	var cut int64
	err = h.db.w.do(ctx, func(tx *wtx) error {
		dup, cut = false, 0
		if msgID != nil {
			var n int
			if err := tx.QueryRow(`SELECT count(*) FROM room_history WHERE room = ? AND message_id = ?`,
				[]byte(room), msgID).Scan(&n); err != nil {
				return err
			}
			if dup = n > 0; dup {
				return nil
			}
		}
		seq, err := nextSeq(tx, "room_history")
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO room_history (seq, room, message_id, at_ms, text_bytes, body)
			VALUES (?, ?, ?, ?, ?, ?)`, seq, []byte(room), msgID, e.At.UnixMilli(), len(e.Text), string(body)); err != nil {
			return err
		}
		var upTo sql.NullInt64
		if err := tx.QueryRow(`SELECT max(seq) FROM (
				SELECT seq, row_number() OVER w AS n, sum(text_bytes) OVER w AS b
				FROM room_history WHERE room = ?1 AND gone_seq IS NULL
				WINDOW w AS (ORDER BY seq DESC))
			WHERE n > ?2 OR (?3 > 0 AND b > ?3)`, []byte(room), lim.Count, lim.MaxBytes).Scan(&upTo); err != nil {
			return err
		}
		if upTo.Valid {
			cut, err = cutRows(tx, room, upTo.Int64)
		}
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("sqlitestore: history append: %w", err)
	}
	h.commits.Add(1)
	if !dup {
		h.appends.Add(1)
	}
	if cut > 0 {
		h.cutDone(ctx)
	}
	return dup, noWait, nil
}

func noWait() error { return nil }

// cutRows removes room's kept entries up to seq upTo in tx: entries
// without a message id go; the others stay as removed (gone_seq), for
// redelivery detection, until they are pruned.
func cutRows(tx *wtx, room string, upTo int64) (int64, error) {
	r, err := tx.Exec(`DELETE FROM room_history WHERE room = ? AND gone_seq IS NULL AND seq <= ? AND message_id IS NULL`,
		[]byte(room), upTo)
	if err != nil {
		return 0, err
	}
	del, err := r.RowsAffected()
	if err != nil {
		return 0, err
	}
	gone, err := nextSeq(tx, "room_history_gone")
	if err != nil {
		return 0, err
	}
	r, err = tx.Exec(`UPDATE room_history SET gone_seq = ?, body = '{}'
		WHERE room = ? AND gone_seq IS NULL AND seq <= ? AND message_id IS NOT NULL`, gone, []byte(room), upTo)
	if err != nil {
		return 0, err
	}
	upd, err := r.RowsAffected()
	return del + upd, err
}

// cutDone counts a cut and every roomPruneEvery cuts forgets removed
// entries beyond the newest RoomGoneKeep.
func (h *RoomLog) cutDone(ctx context.Context) {
	if h.cuts.Add(1)%roomPruneEvery != 0 {
		return
	}
	err := h.db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`DELETE FROM room_history WHERE seq IN (SELECT seq FROM room_history
			WHERE gone_seq IS NOT NULL ORDER BY gone_seq DESC, seq DESC LIMIT -1 OFFSET ?)`, RoomGoneKeep)
		return err
	})
	if err != nil {
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

// errFull stops Take's scan at the byte limit.
var errFull = errors.New("byte limit reached")

// Take returns room's entries up to sequence upTo, oldest first: the
// newest lim.Count of them within lim.MaxBytes. It does not remove them:
// the caller cuts them once the turn that holds them is durable.
func (h *RoomLog) Take(room string, upTo uint64, lim sessions.HistoryLimits) ([]sessions.HistoryEntry, error) {
	if lim.Count <= 0 {
		return nil, nil
	}
	ctx, cancel := roomCall()
	defer cancel()
	var out []sessions.HistoryEntry
	bytes := 0
	err := h.db.query(ctx, func(r *sql.Rows) error {
		var (
			seq  int64
			n    int
			body string
		)
		if err := r.Scan(&seq, &n, &body); err != nil {
			return err
		}
		if lim.MaxBytes > 0 && bytes+n > lim.MaxBytes {
			return errFull
		}
		bytes += n
		var b roomBody
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			return fmt.Errorf("entry %d: %w", seq, err)
		}
		out = append(out, sessions.HistoryEntry{Seq: uint64(seq), MessageID: b.ID, SenderID: b.From,
			SenderName: b.Name, At: b.At, Text: b.Text})
		return nil
	}, `SELECT seq, text_bytes, body FROM room_history
		WHERE room = ? AND gone_seq IS NULL AND seq <= ? ORDER BY seq DESC LIMIT ?`, []byte(room), seqParam(upTo), lim.Count)
	if err != nil && !errors.Is(err, errFull) {
		return nil, fmt.Errorf("sqlitestore: history take: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// Cut removes room's entries up to sequence upTo (a turn took them),
// committed when it returns.
func (h *RoomLog) Cut(room string, upTo uint64) error {
	ctx, cancel := roomCall()
	defer cancel()
	var n int64
	err := h.db.w.do(ctx, func(tx *wtx) (err error) {
		n, err = cutRows(tx, room, seqParam(upTo))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: history cut: %w", err)
	}
	h.commits.Add(1)
	if n > 0 {
		h.cutDone(ctx)
	}
	return nil
}

// Clear removes every entry of room (a reset of its session).
func (h *RoomLog) Clear(room string) error {
	return h.Cut(room, math.MaxInt64)
}

// ClearBefore removes room's entries sent before t, and every entry added
// before the newest of them (entries leave in sequence order).
func (h *RoomLog) ClearBefore(room string, t time.Time) error {
	ctx, cancel := roomCall()
	defer cancel()
	var n int64
	err := h.db.w.do(ctx, func(tx *wtx) error {
		var upTo sql.NullInt64
		if err := tx.QueryRow(`SELECT max(seq) FROM room_history WHERE room = ? AND gone_seq IS NULL AND at_ms < ?`,
			[]byte(room), t.UnixMilli()).Scan(&upTo); err != nil || !upTo.Valid {
			return err
		}
		var err error
		n, err = cutRows(tx, room, upTo.Int64)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: history clear before: %w", err)
	}
	if n > 0 {
		h.cutDone(ctx)
	}
	return nil
}

// Len is how many entries room keeps (0, logged, on a read failure).
func (h *RoomLog) Len(room string) int {
	ctx, cancel := roomCall()
	defer cancel()
	var n int
	if err := h.db.read.QueryRowContext(ctx, `SELECT count(*) FROM room_history WHERE room = ? AND gone_seq IS NULL`,
		[]byte(room)).Scan(&n); err != nil {
		h.log.Warn("history length unavailable", zap.Error(err))
		return 0
	}
	return n
}

// Seq is the latest sequence number handed to an entry (0, logged, on a
// read failure): a turn for a message accepted now takes the entries up
// to it, never later ones.
func (h *RoomLog) Seq() uint64 {
	ctx, cancel := roomCall()
	defer cancel()
	var s int64
	if err := h.db.read.QueryRowContext(ctx, `SELECT value FROM sequences WHERE name = 'room_history'`).Scan(&s); err != nil {
		h.log.Warn("history sequence unavailable", zap.Error(err))
	}
	return uint64(s)
}

// Stats reports rooms and entries kept, this handle's appends and commits
// (Fsyncs), the database file's size (FileBytes) and the bytes of the
// kept entries (LiveBytes).
func (h *RoomLog) Stats() sessions.HistoryStats {
	st := sessions.HistoryStats{Appends: h.appends.Load(), Fsyncs: h.commits.Load()}
	ctx, cancel := roomCall()
	defer cancel()
	err := h.db.read.QueryRowContext(ctx, `SELECT count(DISTINCT room), count(*), coalesce(sum(length(CAST(body AS BLOB))), 0),
			(SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size())
		FROM room_history WHERE gone_seq IS NULL`).Scan(&st.Rooms, &st.Entries, &st.LiveBytes, &st.FileBytes)
	if err != nil {
		h.log.Warn("history stats unavailable", zap.Error(err))
	}
	return st
}

// Rooms lists the rooms with kept entries, sorted as bytes.
func (h *RoomLog) Rooms(ctx context.Context) ([]string, error) {
	var rooms []string
	err := h.db.query(ctx, func(r *sql.Rows) error {
		var b []byte
		err := r.Scan(&b)
		rooms = append(rooms, string(b))
		return err
	}, `SELECT DISTINCT room FROM room_history WHERE gone_seq IS NULL ORDER BY room`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: rooms: %w", err)
	}
	return rooms, nil
}
