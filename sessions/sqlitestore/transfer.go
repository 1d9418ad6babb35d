package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// Transfer is the SQLite side of a migration (sessions.Exporter and
// sessions.Importer, see sessions/seam_transfer.go): index entries,
// archived sessions and transcripts as rows; a transcript line becomes
// one row whose body is the line byte for byte, so it reads back
// identical. Each ImportKey is one writer job (one transaction), durable
// when it returns. Use it while no daemon runs on the file (the state dir's lock).
type Transfer struct{ db *DB }

var _ sessions.Importer = (*Transfer)(nil)

// Transfer returns db's side of a migration.
func (db *DB) Transfer() *Transfer { return &Transfer{db: db} }

// Kind is "sqlite".
func (t *Transfer) Kind() string { return "sqlite" }

// ExportAgents lists the agents with entries or archived sessions.
func (t *Transfer) ExportAgents(ctx context.Context) ([]string, error) {
	var out []string
	err := t.db.query(ctx, func(r *sql.Rows) error {
		var a string
		err := r.Scan(&a)
		out = append(out, a)
		return err
	}, `SELECT agent_id FROM entries UNION SELECT agent_id FROM archived ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: export agents: %w", err)
	}
	return out, nil
}

// ExportKeys returns every key of agentID with its entry and its archived
// sessions (the newest sessions.MaxArchivedPerKey), newest first, sorted
// by key.
func (t *Transfer) ExportKeys(ctx context.Context, agentID string) ([]sessions.KeyState, error) {
	byKey := map[string]*sessions.KeyState{}
	err := t.db.query(ctx, func(r *sql.Rows) error {
		var body, extra string
		if err := r.Scan(&body, &extra); err != nil {
			return err
		}
		e, err := decodeEntry(body, extra)
		if err != nil {
			return err
		}
		byKey[e.SessionKey] = &sessions.KeyState{Key: e.SessionKey, Entry: &e}
		return nil
	}, `SELECT body, extra FROM entries WHERE agent_id = ?`, agentID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: export %s: %w", agentID, err)
	}
	err = t.db.query(ctx, func(r *sql.Rows) error {
		var (
			key                  string
			a                    sessions.Archived
			at, started, updated int64
		)
		if err := r.Scan(&key, &a.SessionID, &a.Reason, &at, &a.Title, &started, &updated,
			&a.MessageCount, &a.TotalTokens, &a.Deleted); err != nil {
			return err
		}
		a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt = fromNanos(at), fromNanos(started), fromNanos(updated)
		ks := byKey[key]
		if ks == nil {
			ks = &sessions.KeyState{Key: key}
			byKey[key] = ks
		}
		ks.Archived = append(ks.Archived, a)
		return nil
	}, `SELECT session_key, session_id, reason, archived_at, title, session_started_at,
		updated_at, message_count, total_tokens, deleted FROM (
			SELECT *, row_number() OVER (PARTITION BY session_key ORDER BY archived_at DESC, id DESC) AS n
			FROM archived WHERE agent_id = ?1)
		WHERE n <= ?2 ORDER BY session_key, archived_at DESC, id DESC`, agentID, sessions.MaxArchivedPerKey)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: export %s: %w", agentID, err)
	}
	out := make([]sessions.KeyState, 0, len(byKey))
	for _, ks := range byKey {
		out = append(out, *ks)
	}
	slices.SortFunc(out, func(a, b sessions.KeyState) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ExportTranscript returns the bodies of ref's transcript rows in seq
// order: the lines the files backend writes.
func (t *Transfer) ExportTranscript(ctx context.Context, agentID string, ref sessions.TranscriptRef) ([][]byte, error) {
	var lines [][]byte
	err := t.db.query(ctx, func(r *sql.Rows) error {
		var b string
		err := r.Scan(&b)
		lines = append(lines, []byte(b))
		return err
	}, `SELECT body FROM transcript_entries WHERE session_id = ? ORDER BY seq`, ref.SessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: export transcript %s: %w", ref.SessionID, err)
	}
	return lines, nil
}

// lineFields are the fields of a transcript line that have columns.
type lineFields struct {
	Type      string  `json:"type"`
	ID        *string `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`
}

// ImportKey makes agentID's key exactly k in one transaction: its entry
// and archived rows replaced, and every transcript in k.Transcripts
// replaced row for row (its head and search index rebuilt from the lines).
func (t *Transfer) ImportKey(ctx context.Context, agentID string, k sessions.KeyCopy) error {
	key, err := routing.Parse(k.Key)
	if err != nil {
		return fmt.Errorf("sqlitestore: import %q: %w", clip(k.Key), err)
	}
	if key.Agent != agentID {
		return fmt.Errorf("sqlitestore: import %q: key of agent %q, not %q", clip(k.Key), key.Agent, agentID)
	}
	if k.Entry != nil && (k.Entry.SessionKey != k.Key || sessions.CheckSessionID(k.Entry.SessionID) != nil) {
		return fmt.Errorf("sqlitestore: import %s: entry of key %q with session id %q", k.Key, clip(k.Entry.SessionKey), clip(k.Entry.SessionID))
	}
	for _, a := range k.Archived {
		if sessions.CheckSessionID(a.SessionID) != nil {
			return fmt.Errorf("sqlitestore: import %s: archived session id %q is not a canonical UUID", k.Key, clip(a.SessionID))
		}
	}
	ids := make([]string, 0, len(k.Transcripts))
	for id := range k.Transcripts {
		if sessions.CheckSessionID(id) != nil {
			return fmt.Errorf("sqlitestore: import %s: session id %q is not a canonical UUID", k.Key, clip(id))
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fallback := time.Now()
	if k.Entry != nil {
		fallback = k.Entry.SessionStartedAt
	}
	st := t.db.Store(agentID, nil)
	err = t.db.w.do(ctx, func(tx *wtx) error {
		if _, err := tx.Exec(`DELETE FROM entries WHERE agent_id = ? AND session_key = ?`, agentID, k.Key); err != nil {
			return err
		}
		if k.Entry != nil {
			if err := st.insert(tx, *k.Entry); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(`DELETE FROM archived WHERE agent_id = ? AND session_key = ?`, agentID, k.Key); err != nil {
			return err
		}
		for i := len(k.Archived) - 1; i >= 0; i-- { // oldest first: the newest gets the highest id
			a := k.Archived[i]
			if _, err := tx.Exec(`INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, title,
				session_started_at, updated_at, message_count, total_tokens, deleted)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				agentID, k.Key, a.SessionID, a.Reason, toNanos(a.ArchivedAt), a.Title, toNanos(a.SessionStartedAt),
				toNanos(a.UpdatedAt), a.MessageCount, a.TotalTokens, a.Deleted); err != nil {
				return err
			}
		}
		for _, id := range ids {
			if err := deleteTranscript(tx, id); err != nil {
				return err
			}
			if err := importLines(tx, id, k.Transcripts[id], fallback); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: import %s: %w", k.Key, err)
	}
	return nil
}

// importLines writes session id's transcript lines, numbered from 1, its
// head and its search index, in tx.
func importLines(tx *wtx, id string, lines [][]byte, fallback time.Time) error {
	if len(lines) == 0 {
		return nil
	}
	at := fallback.UTC()
	leaf, messages := "", 0
	for i, l := range lines {
		var f lineFields
		if err := json.Unmarshal(l, &f); err != nil {
			return fmt.Errorf("transcript %s line %d: %w", id, i+1, err)
		}
		if f.ID == nil || *f.ID == "" || f.Type == "" {
			return fmt.Errorf("transcript %s line %d has no id or type", id, i+1)
		}
		if ts, err := time.Parse(time.RFC3339Nano, f.Timestamp); err == nil {
			at = ts.UTC()
		}
		var parent any
		if f.ParentID != nil && *f.ParentID != "" {
			parent = *f.ParentID
		}
		seq := int64(i + 1)
		if _, err := tx.Exec(`INSERT INTO transcript_entries (session_id, seq, id, parent_id, type, body, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, id, seq, *f.ID, parent, f.Type, string(l), toNanos(at)); err != nil {
			return fmt.Errorf("transcript %s line %d: %w", id, i+1, err)
		}
		if f.Type == typeSession {
			continue
		}
		leaf = *f.ID
		if f.Type != typeMessage {
			continue
		}
		messages++
		n, err := transcript.ParseEntry(l, seq)
		if err != nil {
			return fmt.Errorf("transcript %s line %d: %w", id, i+1, err)
		}
		if n != nil && n.IsMessage {
			if err := indexMessage(tx, id, seq, n.Msg); err != nil {
				return err
			}
		}
	}
	_, err := tx.Exec(`INSERT INTO transcript_heads (session_id, last_seq, leaf_id, messages) VALUES (?, ?, ?, ?)`,
		id, len(lines), leaf, messages)
	return err
}
