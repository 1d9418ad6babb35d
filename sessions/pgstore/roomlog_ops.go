package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// roomOpTimeout bounds the methods without a context.
const roomOpTimeout = 30 * time.Second

func roomCall() (context.Context, context.CancelFunc) {
	return context.WithTimeout(withOp(context.Background(), OpRooms), roomOpTimeout)
}

// seqParam is a sequence number as a bigint parameter (seqs never exceed
// int64; larger values mean "everything").
func seqParam(s uint64) int64 {
	if s > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}

// Take returns room's entries up to sequence upTo, oldest first: the newest
// lim.Count of them within lim.MaxBytes. It does not remove them: the
// caller cuts them (Cut) once the turn that holds them is durable. It waits
// for adds to the room in flight, so every entry up to a Seq read before
// is seen.
func (h *RoomLog) Take(room string, upTo uint64, lim sessions.HistoryLimits) ([]sessions.HistoryEntry, error) {
	if lim.Count <= 0 {
		return nil, nil
	}
	ctx, cancel := roomCall()
	defer cancel()
	var out []sessions.HistoryEntry
	err := h.inRoom(ctx, room, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seq, text_bytes, body::text FROM room_history
			WHERE room = $1 AND gone_seq IS NULL AND seq <= $2 ORDER BY seq DESC LIMIT $3`,
			[]byte(room), seqParam(upTo), lim.Count)
		if err != nil {
			return err
		}
		out = out[:0]
		bytes := 0
		var (
			seq  int64
			n    int
			body string
		)
		_, err = pgx.ForEachRow(rows, []any{&seq, &n, &body}, func() error {
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
		})
		if errors.Is(err, errFull) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: history take: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// errFull stops Take's scan at the byte limit.
var errFull = errors.New("byte limit reached")

// Cut removes room's entries up to sequence upTo (a turn took them),
// committed when it returns.
func (h *RoomLog) Cut(room string, upTo uint64) error {
	ctx, cancel := roomCall()
	defer cancel()
	var n int64
	if err := h.inRoom(ctx, room, func(tx pgx.Tx) (err error) {
		n, err = cutRows(ctx, tx, room, seqParam(upTo))
		return err
	}); err != nil {
		return fmt.Errorf("pgstore: history cut: %w", err)
	}
	if n > 0 {
		h.cutDone(ctx)
	}
	return nil
}

// Clear removes every entry of room (a reset of its session).
func (h *RoomLog) Clear(room string) error {
	seq, err := h.seq()
	if err != nil {
		return fmt.Errorf("pgstore: history clear: %w", err)
	}
	return h.Cut(room, seq)
}

// ClearBefore removes room's entries sent before t, and every entry added
// before the newest of them (as the files history does: entries leave in
// sequence order).
func (h *RoomLog) ClearBefore(room string, t time.Time) error {
	ctx, cancel := roomCall()
	defer cancel()
	var n int64
	err := h.inRoom(ctx, room, func(tx pgx.Tx) error {
		var upTo *int64
		if err := tx.QueryRow(ctx, `SELECT max(seq) FROM room_history
			WHERE room = $1 AND gone_seq IS NULL AND at_ms < $2`, []byte(room), t.UnixMilli()).Scan(&upTo); err != nil || upTo == nil {
			return err
		}
		var err error
		n, err = cutRows(ctx, tx, room, *upTo)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: history clear before: %w", err)
	}
	if n > 0 {
		h.cutDone(ctx)
	}
	return nil
}

// Len is how many entries room keeps (0, logged, when the database does
// not answer).
func (h *RoomLog) Len(room string) int {
	ctx, cancel := roomCall()
	defer cancel()
	var n int
	if err := h.db.pool.QueryRow(ctx, `SELECT count(*) FROM room_history WHERE room = $1 AND gone_seq IS NULL`,
		[]byte(room)).Scan(&n); err != nil {
		h.log.Warn("history length unavailable", zap.Error(err))
		return 0
	}
	return n
}

// Seq is the latest sequence number handed to an entry (0, logged, when the
// database does not answer): a turn for a message accepted now takes the
// entries up to it, never later ones.
func (h *RoomLog) Seq() uint64 {
	s, err := h.seq()
	if err != nil {
		h.log.Warn("history sequence unavailable", zap.Error(err))
	}
	return s
}

func (h *RoomLog) seq() (uint64, error) {
	ctx, cancel := roomCall()
	defer cancel()
	var s int64
	err := h.db.pool.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM room_history_seq`).Scan(&s)
	if err != nil {
		return 0, fmt.Errorf("pgstore: history seq: %w", err)
	}
	return uint64(s), nil
}

// Stats reports rooms and entries kept, this handle's appends and commits
// (Fsyncs), the table's size on disk (FileBytes) and the bytes of the kept
// entries (LiveBytes).
func (h *RoomLog) Stats() sessions.HistoryStats {
	st := sessions.HistoryStats{Appends: h.appends.Load(), Fsyncs: h.commits.Load()}
	ctx, cancel := roomCall()
	defer cancel()
	err := h.db.pool.QueryRow(ctx, `SELECT count(DISTINCT room), count(*), coalesce(sum(octet_length(body::text)), 0),
			pg_total_relation_size('room_history')
		FROM room_history WHERE gone_seq IS NULL`).Scan(&st.Rooms, &st.Entries, &st.LiveBytes, &st.FileBytes)
	if err != nil {
		h.log.Warn("history stats unavailable", zap.Error(err))
	}
	return st
}
