package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
)

// Searcher is the SQLite backend's transcript search: an inverted index
// of the words (sessions/searchtext's, as the files backend splits them)
// of every user and assistant message, written in the transaction of the
// append that stores the message. A query finds the messages holding
// every word, of current sessions only (the join with entries: a reset or
// /delete takes a session out at once, /switch brings it back), newest
// first.
type Searcher struct{ db *DB }

var _ sessions.Searcher = (*Searcher)(nil)

// Search returns the searcher of db.
func (db *DB) Search() *Searcher { return &Searcher{db: db} }

// searchText is what a message's hits show and match: its text blocks.
func searchText(m sessions.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == sessions.BlockText && c.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// indexMessage indexes message m, entry seq of sessionID, in tx: what
// people and the model said (not tool results, which would drown it).
func indexMessage(tx *wtx, sessionID string, seq int64, m *sessions.Message) error {
	if m == nil || (m.Role != sessions.RoleUser && m.Role != sessions.RoleAssistant) {
		return nil
	}
	text := searchText(*m)
	words := searchtext.Tokens(text)
	if len(words) == 0 {
		return nil
	}
	if _, err := tx.Exec(`INSERT OR REPLACE INTO search_docs (session_id, seq, role, at_ms, text) VALUES (?, ?, ?, ?, ?)`,
		sessionID, seq, m.Role, m.Timestamp, text); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	// Every word in one statement (a JSON array of them), not one
	// statement per word.
	list, err := json.Marshal(words)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	if _, err := tx.Exec(`INSERT OR IGNORE INTO search_terms (token, session_id, seq)
		SELECT value, ?, ? FROM json_each(?)`, sessionID, seq, string(list)); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// Search implements sessions.Searcher.
func (s *Searcher) Search(ctx context.Context, q sessions.SearchQuery) ([]sessions.SearchHit, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	words := searchtext.Tokens(q.Text)
	var (
		where []string
		args  []any
	)
	in := func(col string, vals []string) {
		where = append(where, col+` IN (`+strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")+`)`)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("token", words)
	inner := `SELECT session_id, seq FROM search_terms WHERE ` + where[0] + ` GROUP BY session_id, seq HAVING count(*) = ?`
	args = append(args, len(words))
	where = where[:0]
	if len(q.Agents) > 0 {
		in("e.agent_id", q.Agents)
	}
	if q.Room != "" {
		ids, err := s.roomSessions(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return []sessions.SearchHit{}, nil
		}
		in("d.session_id", ids)
	}
	if !q.Since.IsZero() {
		where = append(where, `d.at_ms >= ?`)
		args = append(args, ceilMilli(q.Since))
	}
	cond := ""
	if len(where) > 0 {
		cond = ` AND ` + strings.Join(where, " AND ")
	}
	args = append(args, q.Limit)
	hits := []sessions.SearchHit{}
	err = s.db.query(ctx, func(r *sql.Rows) error {
		var (
			h    sessions.SearchHit
			at   int64
			text string
		)
		if err := r.Scan(&h.Agent, &h.SessionKey, &h.SessionID, &h.EntryID, &h.Role, &at, &text); err != nil {
			return err
		}
		h.At = time.UnixMilli(at).UTC()
		h.Snippet = searchtext.Snippet(text, words)
		hits = append(hits, h)
		return nil
	}, `SELECT e.agent_id, e.session_key, d.session_id, t.id, d.role, d.at_ms, d.text
		FROM (`+inner+`) m
		JOIN search_docs d ON d.session_id = m.session_id AND d.seq = m.seq
		JOIN entries e ON e.session_id = d.session_id
		JOIN transcript_entries t ON t.session_id = d.session_id AND t.seq = d.seq
		WHERE 1 = 1`+cond+`
		ORDER BY d.at_ms DESC, d.seq DESC, d.session_id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: search: %w", err)
	}
	return hits, nil
}

// roomSessions lists the current sessions (of q's agents) in q's room.
func (s *Searcher) roomSessions(ctx context.Context, q sessions.SearchQuery) ([]string, error) {
	match, err := sessions.RoomMatcher(q.Room)
	if err != nil {
		return nil, err
	}
	var ids []string
	agents := map[string]bool{}
	for _, a := range q.Agents {
		agents[a] = true
	}
	err = s.db.query(ctx, func(r *sql.Rows) error {
		var agent, key, id string
		if err := r.Scan(&agent, &key, &id); err != nil {
			return err
		}
		if (len(agents) == 0 || agents[agent]) && match(key) {
			ids = append(ids, id)
		}
		return nil
	}, `SELECT agent_id, session_key, session_id FROM entries`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: search: room: %w", err)
	}
	return ids, nil
}
