package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TranscriptEntry is one entry of a session's transcript: one line of the
// files backend's JSONL (SPEC §3.4), with the fields PostgreSQL indexes
// pulled out of the body.
type TranscriptEntry struct {
	// Seq is the entry's place in its session, from 1; Append assigns it.
	Seq int64
	// ID and ParentID chain the entries (ParentID "" is JSON null).
	ID, ParentID string
	// Type is the entry's type: session, message, compaction, ...
	Type string
	// Body is the whole entry as JSON, stored byte for byte.
	Body json.RawMessage
	// CreatedAt is when it was appended (Append sets it when zero).
	CreatedAt time.Time
}

// Entry types the store looks at (the body says the same).
const (
	TypeSession    = "session"
	TypeMessage    = "message"
	TypeCompaction = "compaction"
)

// appendSQL appends a batch to one session in one statement: the upsert on
// transcript_heads reserves seq numbers under the head row's lock (so
// concurrent appends to one session queue there and none is lost), and the
// insert numbers the batch from the reserved base in argument order. The
// head's leaf becomes the batch's last entry that is not a session header
// and its message count grows by the batch's message entries.
const appendSQL = `WITH head AS (
	INSERT INTO transcript_heads AS h (session_id, last_seq, leaf_id, messages)
	VALUES ($1, $2::bigint, NULLIF($8, ''), $9::bigint)
	ON CONFLICT (session_id) DO UPDATE SET last_seq = h.last_seq + excluded.last_seq,
		leaf_id = COALESCE(excluded.leaf_id, h.leaf_id), prev_leaf_id = COALESCE(h.leaf_id, ''),
		messages = h.messages + excluded.messages
	RETURNING last_seq - $2::bigint AS base)
INSERT INTO transcript_entries (session_id, seq, id, parent_id, type, body, created_at, first_kept_id, search)
SELECT $1, head.base + u.ord, u.id, NULLIF(u.parent_id, ''), u.type, u.body, u.created_at, NULLIF(u.kept, ''),
	array_to_tsvector(string_to_array(u.words, ' '))
FROM head, unnest($3::text[], $4::text[], $5::text[], $6::json[], $7::timestamptz[], $10::text[], $11::text[])
	WITH ORDINALITY AS u(id, parent_id, type, body, created_at, kept, words, ord)
RETURNING seq`

// Append adds entries to the end of sessionID's transcript, durably and
// atomically (all or none), numbering them in argument order after every
// entry committed before. Concurrent appends to one session are
// serialised; appends to different sessions do not wait for each other.
// It returns the assigned sequence numbers.
func (db *DB) Append(ctx context.Context, sessionID string, entries ...TranscriptEntry) ([]int64, error) {
	ctx = withOp(ctx, OpAppend)
	args, err := db.appendArgs(sessionID, entries)
	if err != nil || args == nil {
		return nil, err
	}
	return db.appendOne(ctx, sessionID, args)
}

// appendArgs checks entries and returns appendSQL's arguments (nil for no
// entries).
func (db *DB) appendArgs(sessionID string, entries []TranscriptEntry) ([]any, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if sessionID == "" {
		return nil, errors.New("pgstore: append: empty session id")
	}
	n := len(entries)
	ids, parents, types := make([]string, n), make([]string, n), make([]string, n)
	bodies, times, kept := make([]string, n), make([]time.Time, n), make([]string, n)
	now := db.clock()
	leaf, messages := "", 0
	for i, e := range entries {
		if e.ID == "" || e.Type == "" {
			return nil, fmt.Errorf("pgstore: append %s: entry %d has no id or type", sessionID, i)
		}
		if !json.Valid(e.Body) {
			return nil, fmt.Errorf("pgstore: append %s: entry %s: body is not JSON", sessionID, e.ID)
		}
		ids[i], parents[i], types[i], bodies[i], times[i] = e.ID, e.ParentID, e.Type, string(e.Body), e.CreatedAt
		if times[i].IsZero() {
			times[i] = now
		}
		switch e.Type {
		case TypeSession:
			continue
		case TypeMessage:
			messages++
		case TypeCompaction:
			var c struct {
				FirstKept string `json:"firstKeptEntryId"`
			}
			if err := json.Unmarshal(e.Body, &c); err != nil {
				return nil, fmt.Errorf("pgstore: append %s: compaction %s: %w", sessionID, e.ID, err)
			}
			kept[i] = c.FirstKept
		}
		leaf = e.ID
	}
	return []any{sessionID, n, ids, parents, types, bodies, times, leaf, messages, kept,
		entriesSearchWords(types, bodies)}, nil
}

func (db *DB) appendOne(ctx context.Context, sessionID string, args []any) ([]int64, error) {
	return db.exec(ctx, sessionID, appendSQL, args)
}

// exec runs one append statement returning seq numbers.
func (db *DB) exec(ctx context.Context, sessionID, sql string, args []any) ([]int64, error) {
	rows, err := db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %s: %w", sessionID, err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %s: %w", sessionID, err)
	}
	return seqs, nil
}

// Tail is the part of a transcript that rebuilding the context reads.
type Tail struct {
	// Entries are in seq order.
	Entries []TranscriptEntry
	// Compaction is the index in Entries of the latest compaction, -1 when
	// the transcript has none (Entries is then the whole transcript).
	Compaction int
}

// loadTailSQL finds the latest compaction by the transcript_compactions
// index, then the entry its firstKeptEntryId names (by the (session_id, id)
// key), and reads from the earlier of the two: the kept entries, the
// compaction and everything after it, never what precedes them.
const loadTailSQL = `WITH c AS (
	SELECT seq, first_kept_id AS kept FROM transcript_entries
	WHERE session_id = $1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1),
start AS (
	SELECT LEAST(c.seq, COALESCE((SELECT k.seq FROM transcript_entries k
		WHERE k.session_id = $1 AND k.id = c.kept), c.seq)) AS seq FROM c)
SELECT seq, id, COALESCE(parent_id, ''), type, body::text, created_at FROM transcript_entries
WHERE session_id = $1 AND seq >= COALESCE((SELECT seq FROM start), 0)
ORDER BY seq`

// LoadFromLatestCompaction reads sessionID's transcript from its latest
// compaction (from the first entry that compaction kept, if earlier): what
// precedes it is neither read nor sent. A transcript without a compaction
// is read whole; an unknown session is empty.
func (db *DB) LoadFromLatestCompaction(ctx context.Context, sessionID string) (Tail, error) {
	ctx = withOp(ctx, OpContext)
	rows, err := db.pool.Query(ctx, loadTailSQL, sessionID)
	if err != nil {
		return Tail{}, fmt.Errorf("pgstore: load %s: %w", sessionID, err)
	}
	entries, err := pgx.CollectRows(rows, scanTranscriptEntry)
	if err != nil {
		return Tail{}, fmt.Errorf("pgstore: load %s: %w", sessionID, err)
	}
	t := Tail{Entries: entries, Compaction: -1}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == TypeCompaction {
			t.Compaction = i
			break
		}
	}
	return t, nil
}

// Load reads sessionID's transcript from seq from on (1 is the start).
func (db *DB) Load(ctx context.Context, sessionID string, from int64) ([]TranscriptEntry, error) {
	ctx = withOp(ctx, OpContext)
	rows, err := db.pool.Query(ctx, `SELECT seq, id, COALESCE(parent_id, ''), type, body::text, created_at
		FROM transcript_entries WHERE session_id = $1 AND seq >= $2 ORDER BY seq`, sessionID, from)
	if err != nil {
		return nil, fmt.Errorf("pgstore: load %s: %w", sessionID, err)
	}
	entries, err := pgx.CollectRows(rows, scanTranscriptEntry)
	if err != nil {
		return nil, fmt.Errorf("pgstore: load %s: %w", sessionID, err)
	}
	return entries, nil
}

func scanTranscriptEntry(r pgx.CollectableRow) (TranscriptEntry, error) {
	var (
		e    TranscriptEntry
		body string
	)
	err := r.Scan(&e.Seq, &e.ID, &e.ParentID, &e.Type, &body, &e.CreatedAt)
	e.Body, e.CreatedAt = json.RawMessage(body), e.CreatedAt.UTC()
	return e, err
}
