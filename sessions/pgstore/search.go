package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
)

// Searcher is the PostgreSQL backend's transcript search: the tsvector
// column transcript_entries.search (migration 00009, GIN-indexed), which
// holds searchtext.Tokens' words as the daemon wrote them (migration
// 00027, search_tokens.go), queried with the query's words as quoted
// lexemes joined by &: every word must occur, as on the other backends;
// nothing in the query is an operator (websearch_to_tsquery made "a or b"
// either word and "-1001", a chat id, every message without it). Only current sessions are
// searched (the join with entries); hits are the newest messages first,
// like the files backend.
type Searcher struct{ db *DB }

// Search returns the searcher of db.
func (db *DB) Search() *Searcher { return &Searcher{db: db} }

var _ sessions.Searcher = (*Searcher)(nil)

const searchSQL = `
SELECT e.agent_id, e.session_key, t.session_id, t.id, t.search_role, t.search_at,
       COALESCE((gateway_search_row(t.body)).txt, '')
  FROM transcript_entries t
  JOIN entries e ON e.session_id = t.session_id
 WHERE t.search @@ $1::tsquery
   AND ($2::text[] IS NULL OR e.agent_id = ANY($2))
   AND ($3::timestamptz IS NULL OR t.search_at >= $3)
   AND ($4::text[] IS NULL OR t.session_id = ANY($4))
 ORDER BY t.search_at DESC, t.seq DESC, t.session_id DESC
 LIMIT $5`

// Search implements sessions.Searcher.
func (s *Searcher) Search(ctx context.Context, q sessions.SearchQuery) ([]sessions.SearchHit, error) {
	ctx = withOp(ctx, OpContext)
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	var agents, ids []string
	if len(q.Agents) > 0 {
		agents = q.Agents
	}
	if q.Room != "" {
		if ids, err = s.roomSessions(ctx, q); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return []sessions.SearchHit{}, nil
		}
	}
	var since *time.Time
	if !q.Since.IsZero() {
		t := q.Since.UTC()
		since = &t
	}
	words := searchtext.Tokens(q.Text)
	rows, err := s.db.pool.Query(ctx, searchSQL, searchQuery(words), agents, since, ids, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	hits := []sessions.SearchHit{}
	for rows.Next() {
		var (
			h   sessions.SearchHit
			txt string
		)
		if err := rows.Scan(&h.Agent, &h.SessionKey, &h.SessionID, &h.EntryID, &h.Role, &h.At, &txt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: search: %w", err)
		}
		h.At = h.At.UTC().Truncate(time.Millisecond)
		h.Snippet = searchtext.Snippet(txt, words)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	return hits, nil
}

// roomSessions lists the current sessions (of q's agents) in q's room.
func (s *Searcher) roomSessions(ctx context.Context, q sessions.SearchQuery) ([]string, error) {
	match, err := sessions.RoomMatcher(q.Room)
	if err != nil {
		return nil, err
	}
	var agents []string
	if len(q.Agents) > 0 {
		agents = q.Agents
	}
	rows, err := s.db.pool.Query(ctx, `SELECT session_key, session_id FROM entries
		WHERE $1::text[] IS NULL OR agent_id = ANY($1)`, agents)
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: room: %w", err)
	}
	var ids []string
	var key, id string
	_, err = pgx.ForEachRow(rows, []any{&key, &id}, func() error {
		if match(key) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: room: %w", err)
	}
	return ids, nil
}
