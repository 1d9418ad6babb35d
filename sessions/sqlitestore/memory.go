package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// memoryStore implements sessions.Memory on the memory_* tables. Every
// write is one writer job, so the count a write checks is the count it
// changes. A scope whose last note goes has its row deleted, as the files
// backend removes its file.
type memoryStore struct{ db *DB }

var _ sessions.Memory = memoryStore{}

// Memory returns the agents' notes stored in the database.
func (db *DB) Memory() sessions.Memory { return memoryStore{db} }

// Notes implements sessions.Memory.
func (s memoryStore) Notes(ctx context.Context, scope sessions.MemoryScope) ([]sessions.MemoryNote, error) {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return nil, fmt.Errorf("sqlitestore: memory: %w", err)
	}
	out := []sessions.MemoryNote{}
	err := s.db.query(ctx, func(r *sql.Rows) error {
		n, err := scanNote(r)
		out = append(out, n)
		return err
	}, `SELECT id, body, created_at, updated_at FROM memory_notes
		WHERE agent_id = ? AND kind = ? AND scope_id = ? ORDER BY id`, scope.AgentID, scope.Kind, scope.ID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: memory %s: %w", scope, err)
	}
	return out, nil
}

type rowScanner interface{ Scan(...any) error }

func scanNote(r rowScanner) (sessions.MemoryNote, error) {
	var (
		n                sessions.MemoryNote
		created, updated int64
	)
	err := r.Scan(&n.ID, &n.Text, &created, &updated)
	n.CreatedAt, n.UpdatedAt = fromNanos(created), fromNanos(updated)
	return n, err
}

// AddNote implements sessions.Memory.
func (s memoryStore) AddNote(ctx context.Context, scope sessions.MemoryScope, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	lim, err := sessions.CheckMemoryWrite(scope, text, lim)
	if err != nil {
		return sessions.MemoryNote{}, err
	}
	at = at.UTC()
	n := sessions.MemoryNote{Text: text, CreatedAt: at, UpdatedAt: at}
	var full error
	err = s.db.w.do(ctx, func(tx *wtx) error {
		full = nil
		if err := tx.QueryRow(`INSERT INTO memory_scopes (agent_id, kind, scope_id, next_id, updated_at)
			VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (agent_id, kind, scope_id) DO UPDATE SET updated_at = excluded.updated_at
			RETURNING next_id`, scope.AgentID, scope.Kind, scope.ID, toNanos(at)).Scan(&n.ID); err != nil {
			return err
		}
		var count int
		if err := tx.QueryRow(`SELECT count(*) FROM memory_notes WHERE agent_id = ? AND kind = ? AND scope_id = ?`,
			scope.AgentID, scope.Kind, scope.ID).Scan(&count); err != nil {
			return err
		}
		if count >= lim.MaxNotes {
			full = &sessions.MemoryFullError{Scope: scope, Max: lim.MaxNotes}
			return full
		}
		if _, err := tx.Exec(`INSERT INTO memory_notes (agent_id, kind, scope_id, id, body, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, scope.AgentID, scope.Kind, scope.ID, n.ID, text, toNanos(at), toNanos(at)); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE memory_scopes SET next_id = ? WHERE agent_id = ? AND kind = ? AND scope_id = ?`,
			n.ID+1, scope.AgentID, scope.Kind, scope.ID)
		return err
	})
	switch {
	case full != nil:
		return sessions.MemoryNote{}, full
	case err != nil:
		return sessions.MemoryNote{}, fmt.Errorf("sqlitestore: memory %s: add: %w", scope, err)
	}
	return n, nil
}

// UpdateNote implements sessions.Memory.
func (s memoryStore) UpdateNote(ctx context.Context, scope sessions.MemoryScope, id int64, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	if _, err := sessions.CheckMemoryWrite(scope, text, lim); err != nil {
		return sessions.MemoryNote{}, err
	}
	var (
		n    sessions.MemoryNote
		none bool
	)
	err := s.db.w.do(ctx, func(tx *wtx) error {
		var err error
		n, err = scanNote(tx.QueryRow(`UPDATE memory_notes SET body = ?, updated_at = ?
			WHERE agent_id = ? AND kind = ? AND scope_id = ? AND id = ?
			RETURNING id, body, created_at, updated_at`, text, toNanos(at.UTC()), scope.AgentID, scope.Kind, scope.ID, id))
		if none = errors.Is(err, sql.ErrNoRows); none {
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		return sessions.MemoryNote{}, fmt.Errorf("sqlitestore: memory %s: update %d: %w", scope, id, err)
	case none:
		return sessions.MemoryNote{}, fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
	}
	return n, nil
}

// ForgetNote implements sessions.Memory.
func (s memoryStore) ForgetNote(ctx context.Context, scope sessions.MemoryScope, id int64) error {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return fmt.Errorf("sqlitestore: memory: %w", err)
	}
	var gone bool
	err := s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`DELETE FROM memory_notes WHERE agent_id = ? AND kind = ? AND scope_id = ? AND id = ?`,
			scope.AgentID, scope.Kind, scope.ID, id)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if gone = n == 0; gone || err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM memory_scopes WHERE agent_id = ?1 AND kind = ?2 AND scope_id = ?3
			AND NOT EXISTS (SELECT 1 FROM memory_notes n WHERE n.agent_id = ?1 AND n.kind = ?2 AND n.scope_id = ?3)`,
			scope.AgentID, scope.Kind, scope.ID)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("sqlitestore: memory %s: forget %d: %w", scope, id, err)
	case gone:
		return fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
	}
	return nil
}

// ForgetScope implements sessions.Memory.
func (s memoryStore) ForgetScope(ctx context.Context, scope sessions.MemoryScope) (int, error) {
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return 0, fmt.Errorf("sqlitestore: memory: %w", err)
	}
	var n int64
	err := s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`DELETE FROM memory_notes WHERE agent_id = ? AND kind = ? AND scope_id = ?`,
			scope.AgentID, scope.Kind, scope.ID)
		if err != nil {
			return err
		}
		if n, err = r.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM memory_scopes WHERE agent_id = ? AND kind = ? AND scope_id = ?`,
			scope.AgentID, scope.Kind, scope.ID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: memory %s: forget: %w", scope, err)
	}
	return int(n), nil
}

// MemoryScopes implements sessions.Memory.
func (s memoryStore) MemoryScopes(ctx context.Context, agentID string) ([]sessions.MemoryScopeInfo, error) {
	out := []sessions.MemoryScopeInfo{}
	err := s.db.query(ctx, func(r *sql.Rows) error {
		var (
			i       sessions.MemoryScopeInfo
			updated int64
		)
		err := r.Scan(&i.Scope.AgentID, &i.Scope.Kind, &i.Scope.ID, &i.Notes, &i.Bytes, &updated)
		i.UpdatedAt = fromNanos(updated)
		out = append(out, i)
		return err
	}, `SELECT agent_id, kind, scope_id, count(*), sum(length(CAST(body AS BLOB))), max(updated_at)
		FROM memory_notes WHERE ?1 = '' OR agent_id = ?1
		GROUP BY agent_id, kind, scope_id ORDER BY agent_id, kind, scope_id`, agentID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: memory scopes: %w", err)
	}
	return out, nil
}
