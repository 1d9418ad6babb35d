package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Transfer is the PostgreSQL side of a migration (sessions.Exporter and
// sessions.Importer, see sessions/seam_transfer.go): index entries, archived
// sessions and transcripts as rows of entries, archived and
// transcript_entries/transcript_heads. A transcript line becomes one row
// whose body is the line byte for byte (json, not jsonb), so it reads back
// identical. Use it while no daemon runs on the database (LockExclusive).
type Transfer struct{ db *DB }

var _ sessions.Importer = (*Transfer)(nil)

// Transfer returns db's side of a migration.
func (db *DB) Transfer() *Transfer { return &Transfer{db: db} }

// Kind is "postgres".
func (t *Transfer) Kind() string { return "postgres" }

// ExportAgents lists the agents with entries or archived sessions.
func (t *Transfer) ExportAgents(ctx context.Context) ([]string, error) {
	rows, err := t.db.pool.Query(ctx, `SELECT agent_id FROM entries UNION SELECT agent_id FROM archived`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: export agents: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: export agents: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// archivedRow is a row of archived with its key.
type archivedRow struct {
	key string
	a   sessions.Archived
}

// ExportKeys returns every key of agentID with its entry and its archived
// sessions (the newest sessions.MaxArchivedPerKey), newest first, sorted
// by key.
func (t *Transfer) ExportKeys(ctx context.Context, agentID string) ([]sessions.KeyState, error) {
	x := t.db.Index(agentID, nil)
	entries, err := x.list(ctx, `SELECT `+entryColumns+` FROM entries WHERE agent_id = $1`, agentID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: export %s: %w", agentID, err)
	}
	byKey := make(map[string]*sessions.KeyState, len(entries))
	for i := range entries {
		e := entries[i]
		byKey[e.SessionKey] = &sessions.KeyState{Key: e.SessionKey, Entry: &e}
	}
	// Only the archived sessions the seam shows (Archived, Switch: the
	// newest MaxArchivedPerKey of a key) move, as many as the files
	// backend keeps.
	rows, err := t.db.pool.Query(ctx, `SELECT session_key, session_id, reason, archived_at, title, session_started_at,
		updated_at, message_count, total_tokens, deleted FROM (
			SELECT *, row_number() OVER (PARTITION BY session_key ORDER BY archived_at DESC, id DESC) AS n
			FROM archived WHERE agent_id = $1) a
		WHERE n <= $2 ORDER BY session_key, archived_at DESC, id DESC`, agentID, sessions.MaxArchivedPerKey)
	if err != nil {
		return nil, fmt.Errorf("pgstore: export %s: %w", agentID, err)
	}
	arch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (archivedRow, error) {
		var ar archivedRow
		a := &ar.a
		err := r.Scan(&ar.key, &a.SessionID, &a.Reason, &a.ArchivedAt, &a.Title, &a.SessionStartedAt, &a.UpdatedAt,
			&a.MessageCount, &a.TotalTokens, &a.Deleted)
		a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt = a.ArchivedAt.UTC(), a.SessionStartedAt.UTC(), a.UpdatedAt.UTC()
		return ar, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: export %s: %w", agentID, err)
	}
	for _, ar := range arch {
		ks := byKey[ar.key]
		if ks == nil {
			ks = &sessions.KeyState{Key: ar.key}
			byKey[ar.key] = ks
		}
		ks.Archived = append(ks.Archived, ar.a)
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
	rows, err := t.db.pool.Query(ctx, `SELECT body::text FROM transcript_entries WHERE session_id = $1 ORDER BY seq`, ref.SessionID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: export transcript %s: %w", ref.SessionID, err)
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
		var b []byte
		err := r.Scan(&b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: export transcript %s: %w", ref.SessionID, err)
	}
	return lines, nil
}
