package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// transcriptRows are one transcript's lines as the columns of
// transcript_entries.
type transcriptRows struct {
	ids, parents, types, bodies, kept []string
	times                             []time.Time
	// leaf is the id of the last entry that is not the session header
	// ("" when there is none); messages counts the message entries.
	leaf     string
	messages int
}

// lineFields are the fields of a transcript line that have columns.
type lineFields struct {
	Type      string  `json:"type"`
	ID        *string `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`
	// FirstKeptEntryID of a compaction has a column of its own.
	FirstKeptEntryID string `json:"firstKeptEntryId"`
}

// toRows checks sessionID's lines and splits out their columns. created_at
// is the line's timestamp at microseconds (a line without one takes the
// previous line's, the first such line fallback).
func toRows(sessionID string, lines [][]byte, fallback time.Time) (transcriptRows, error) {
	n := len(lines)
	r := transcriptRows{ids: make([]string, n), parents: make([]string, n), types: make([]string, n),
		bodies: make([]string, n), kept: make([]string, n), times: make([]time.Time, n)}
	at := fallback.UTC().Truncate(time.Microsecond)
	for i, l := range lines {
		if !utf8.Valid(l) {
			return r, fmt.Errorf("transcript %s line %d is not valid UTF-8, which PostgreSQL text cannot hold", sessionID, i+1)
		}
		var f lineFields
		if err := json.Unmarshal(l, &f); err != nil {
			return r, fmt.Errorf("transcript %s line %d: %w", sessionID, i+1, err)
		}
		if f.ID == nil || *f.ID == "" || f.Type == "" {
			return r, fmt.Errorf("transcript %s line %d has no id or type", sessionID, i+1)
		}
		if t, err := time.Parse(time.RFC3339Nano, f.Timestamp); err == nil {
			at = t.UTC().Truncate(time.Microsecond)
		}
		r.ids[i], r.types[i], r.bodies[i], r.times[i] = *f.ID, f.Type, string(l), at
		if f.ParentID != nil {
			r.parents[i] = *f.ParentID
		}
		switch f.Type {
		case TypeCompaction:
			r.kept[i] = f.FirstKeptEntryID
		case "message":
			r.messages++
		}
		if f.Type != "session" {
			r.leaf = *f.ID
		}
	}
	return r, nil
}

// insertTranscriptSQL writes a whole transcript, numbered from 1 in line
// order.
// A compaction's first_kept_id is its firstKeptEntryId (” kept: it
// keeps nothing before it); other entries have none.
const insertTranscriptSQL = `INSERT INTO transcript_entries (session_id, seq, id, parent_id, type, body, created_at, first_kept_id,
	search)
SELECT $1, u.ord, u.id, NULLIF(u.parent_id, ''), u.type, u.body, u.created_at,
	CASE WHEN u.type = 'compaction' THEN u.kept END, array_to_tsvector(string_to_array(u.words, ' '))
FROM unnest($2::text[], $3::text[], $4::text[], $5::json[], $6::timestamptz[], $7::text[], $8::text[])
	WITH ORDINALITY AS u(id, parent_id, type, body, created_at, kept, words, ord)`

// insertHeadSQL writes the head of an imported transcript as appends
// leave it: the next seq, the leaf (the last entry that is not the
// header), no append in flight (prev_leaf_id ”), the message count.
const insertHeadSQL = `INSERT INTO transcript_heads (session_id, last_seq, leaf_id, prev_leaf_id, messages)
VALUES ($1, $2, NULLIF($3::text, ''), '', $4)`

// insertArchivedSQL writes a key's archived sessions; the arrays are
// oldest first, so the newest gets the highest id, as archiving gives it.
const insertArchivedSQL = `INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, title,
	session_started_at, updated_at, message_count, total_tokens, deleted)
SELECT $1, $2, u.* FROM unnest($3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::timestamptz[],
	$8::timestamptz[], $9::int[], $10::bigint[], $11::bool[]) AS u`

// ImportKey makes agentID's key exactly k in one transaction: its entry
// and archived rows replaced, and every transcript in k.Transcripts
// replaced row for row (its head set to the number of lines).
func (t *Transfer) ImportKey(ctx context.Context, agentID string, k sessions.KeyCopy) error {
	key, err := routing.Parse(k.Key)
	if err != nil {
		return fmt.Errorf("pgstore: import %q: %w", clip(k.Key), err)
	}
	if key.Agent != agentID {
		return fmt.Errorf("pgstore: import %q: key of agent %q, not %q", clip(k.Key), key.Agent, agentID)
	}
	if k.Entry != nil && (k.Entry.SessionKey != k.Key || !isSessionID(k.Entry.SessionID)) {
		return fmt.Errorf("pgstore: import %s: entry of key %q with session id %q", k.Key, clip(k.Entry.SessionKey), clip(k.Entry.SessionID))
	}
	b := &pgx.Batch{}
	// Each key commits without waiting for the WAL flush; Sync makes them
	// all durable at once at the end (a crash before that loses only keys
	// a second run copies again).
	b.Queue(`SET LOCAL synchronous_commit TO off`)
	b.Queue(`DELETE FROM entries WHERE agent_id = $1 AND session_key = $2`, agentID, k.Key)
	if k.Entry != nil {
		b.Queue(insertEntry, entryArgs(agentID, k.Entry)...)
	}
	b.Queue(`DELETE FROM archived WHERE agent_id = $1 AND session_key = $2`, agentID, k.Key)
	if len(k.Archived) > 0 {
		if err := queueArchived(b, agentID, k); err != nil {
			return err
		}
	}
	fallback := time.Now()
	if k.Entry != nil {
		fallback = k.Entry.SessionStartedAt
	}
	ids := make([]string, 0, len(k.Transcripts))
	for id := range k.Transcripts {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a fixed lock order: concurrent imports never deadlock
	for _, id := range ids {
		if !isSessionID(id) {
			return fmt.Errorf("pgstore: import %s: session id %q is not a canonical UUID", k.Key, clip(id))
		}
		lines := k.Transcripts[id]
		b.Queue(`DELETE FROM transcript_entries WHERE session_id = $1`, id)
		b.Queue(`DELETE FROM transcript_heads WHERE session_id = $1`, id)
		if len(lines) == 0 {
			continue
		}
		r, err := toRows(id, lines, fallback)
		if err != nil {
			return fmt.Errorf("pgstore: import %s: %w", k.Key, err)
		}
		b.Queue(insertTranscriptSQL, id, r.ids, r.parents, r.types, r.bodies, r.times, r.kept,
			entriesSearchWords(r.types, r.bodies))
		b.Queue(insertHeadSQL, id, len(lines), r.leaf, r.messages)
	}
	err = pgx.BeginFunc(ctx, t.db.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("pgstore: import %s: %w", k.Key, err)
	}
	return nil
}

func queueArchived(b *pgx.Batch, agentID string, k sessions.KeyCopy) error {
	n := len(k.Archived)
	ids, reasons, titles := make([]string, n), make([]string, n), make([]string, n)
	at, started, updated := make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	msgs, tokens, deleted := make([]int32, n), make([]int64, n), make([]bool, n)
	for i, a := range k.Archived {
		j := n - 1 - i // oldest first
		if !isSessionID(a.SessionID) {
			return fmt.Errorf("pgstore: import %s: archived session id %q is not a canonical UUID", k.Key, clip(a.SessionID))
		}
		ids[j], reasons[j], titles[j] = a.SessionID, a.Reason, a.Title
		at[j], started[j], updated[j] = a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt
		msgs[j], tokens[j], deleted[j] = int32(a.MessageCount), a.TotalTokens, a.Deleted
	}
	b.Queue(insertArchivedSQL, agentID, k.Key, ids, reasons, at, titles, started, updated, msgs, tokens, deleted)
	return nil
}

// Sync makes every import committed so far durable: one synchronous
// commit flushes the WAL up to it, and with it the asynchronous commits
// of ImportKey before it.
func (t *Transfer) Sync(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, t.db.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO on; SELECT txid_current()`)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: sync: %w", err)
	}
	return nil
}
