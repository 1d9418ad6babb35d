package pgstore

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// chainOf decodes entries into a chain; complete says they start at the
// beginning of the transcript.
func chainOf(entries []TranscriptEntry, complete bool) (*transcript.Chain, error) {
	c := transcript.NewChain(complete)
	for _, e := range entries {
		if err := c.Add(e.Body, e.Seq); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Context rebuilds what the model is sent (SPEC §3.4). It reads from the
// latest compaction (found by the transcript_compactions index) or from
// the first entry that compaction kept, never what precedes them; only a
// chain that needs more (a compaction off the current chain, an entry
// whose parent comes earlier) is read whole. An empty transcript is an
// empty context.
//
// The chain it builds is cached (transcript_cache.go): the next Context
// reads and decodes only the entries appended since.
func (t *TranscriptLog) Context(ctx context.Context) (sessions.Context, error) {
	ctx = withOp(ctx, OpContext)
	r := t.contextRead()
	if err := r.query(ctx, t.db); err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context: %w", err)
	}
	return t.contextFrom(ctx, r)
}

// contextFrom builds the context from what r read: the cached chain
// extended by the entries since, or the tail. It reads again only when
// that is not enough (the cached chain was cut, or needs older entries;
// the tail's chain needs entries before it).
func (t *TranscriptLog) contextFrom(ctx context.Context, r *contextRead) (sessions.Context, error) {
	if r.cc != nil {
		if out, ok, err := t.extendCached(r); err != nil || ok {
			return out, err
		}
		r = &contextRead{sessionID: t.sessionID}
		if err := r.query(ctx, t.db); err != nil {
			return sessions.Context{}, fmt.Errorf("transcript: context: %w", err)
		}
	}
	complete := r.tail.Compaction < 0
	c, err := chainOf(r.tail.Entries, complete)
	if err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context %s: %w", t.sessionID, err)
	}
	if out, ok := c.Context(); ok {
		t.keepChain(c, r.tail.Entries)
		return out, nil
	}
	c, all, err := t.whole(ctx)
	if err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context: %w", err)
	}
	out, _ := c.Context()
	t.keepChain(c, all)
	return out, nil
}

// whole reads the whole transcript into a chain.
func (t *TranscriptLog) whole(ctx context.Context) (*transcript.Chain, []TranscriptEntry, error) {
	all, err := t.db.Load(ctx, t.sessionID, 1)
	if err != nil {
		return nil, nil, err
	}
	c, err := chainOf(all, true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.sessionID, err)
	}
	return c, all, nil
}

// History returns every message of the chain, compactions ignored. It
// reads the whole transcript; an empty one has no messages (nil).
func (t *TranscriptLog) History(ctx context.Context) ([]sessions.Message, error) {
	ctx = withOp(ctx, OpContext)
	c, _, err := t.whole(ctx)
	if err != nil {
		return nil, fmt.Errorf("transcript: history: %w", err)
	}
	if c.Leaf() == "" {
		return nil, nil
	}
	return c.History(), nil
}

// recentSQL reads the last $2 entries of a transcript (by the primary key).
const recentSQL = `SELECT seq, id, COALESCE(parent_id, ''), type, body::text, created_at FROM transcript_entries
WHERE session_id = $1 AND seq > COALESCE((SELECT last_seq FROM transcript_heads WHERE session_id = $1), 0) - $2
ORDER BY seq`

// Records reports which of ids were appended as user messages and whether
// the turn that took them finished with an assistant reply (SPEC §3.7,
// recovery), from the chain's last transcript.RecordsLookback entries.
func (t *TranscriptLog) Records(ctx context.Context, ids []string) (sessions.RecordsState, error) {
	ctx = withOp(ctx, OpContext)
	rows, err := t.db.pool.Query(ctx, recentSQL, t.sessionID, transcript.RecordsLookback)
	if err != nil {
		return sessions.RecordsState{Consumed: map[string]bool{}}, fmt.Errorf("transcript: records %s: %w", t.sessionID, err)
	}
	entries, err := pgx.CollectRows(rows, scanTranscriptEntry)
	if err != nil {
		return sessions.RecordsState{Consumed: map[string]bool{}}, fmt.Errorf("transcript: records %s: %w", t.sessionID, err)
	}
	c, err := chainOf(entries, len(entries) == 0 || entries[0].Seq == 1)
	if err != nil {
		return sessions.RecordsState{Consumed: map[string]bool{}}, fmt.Errorf("transcript: records %s: %w", t.sessionID, err)
	}
	return c.Records(ids), nil
}

// statsSQL reads the head's message count and the seq of the latest
// compaction (by the transcript_compactions index).
const statsSQL = `SELECT COALESCE((SELECT messages FROM transcript_heads WHERE session_id = $1), 0),
	COALESCE((SELECT seq FROM transcript_entries WHERE session_id = $1 AND type = 'compaction'
		ORDER BY seq DESC LIMIT 1), 0)`

// Stats reports the number of message entries and the seq of the latest
// compaction (0 if none): the position Entry.CompactionOffset holds for
// this backend.
func (t *TranscriptLog) Stats(ctx context.Context) (messages int, lastCompaction int64, err error) {
	ctx = withOp(ctx, OpContext)
	if err := t.db.pool.QueryRow(ctx, statsSQL, t.sessionID).Scan(&messages, &lastCompaction); err != nil {
		return 0, 0, fmt.Errorf("transcript: stats %s: %w", t.sessionID, err)
	}
	return messages, lastCompaction, nil
}

// inChainSQL walks the chain back from the head's leaf until it meets $2;
// the walk is bounded by the number of entries, so a damaged cycle ends.
const inChainSQL = `WITH RECURSIVE walk(id, parent_id, depth) AS (
	SELECT e.id, e.parent_id, 1 FROM transcript_heads h
	JOIN transcript_entries e ON e.session_id = h.session_id AND e.id = h.leaf_id
	WHERE h.session_id = $1
	UNION ALL
	SELECT e.id, e.parent_id, w.depth + 1 FROM walk w
	JOIN transcript_entries e ON e.session_id = $1 AND e.id = w.parent_id
	WHERE w.id <> $2 AND w.depth <= (SELECT last_seq FROM transcript_heads WHERE session_id = $1))
SELECT EXISTS (SELECT 1 FROM walk WHERE id = $2)`

// inChain reports whether id is an entry of the chain ending at the leaf.
func (t *TranscriptLog) inChain(ctx context.Context, id string) (bool, error) {
	ctx = withOp(ctx, OpContext)
	if !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		return false, nil // no stored id is such text (PostgreSQL refuses it)
	}
	var in bool
	if err := t.db.pool.QueryRow(ctx, inChainSQL, t.sessionID, id).Scan(&in); err != nil {
		return false, fmt.Errorf("transcript: compaction %s: %w", t.sessionID, err)
	}
	return in, nil
}
