package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// memoryStore implements sessions.Memory on the memory_* tables
// (migration 00013). Every write runs in a transaction that first locks
// its scope's row (an upsert, or SELECT ... FOR UPDATE), so writers of one
// scope queue across pools and replicas: the count a write checks is the
// count it changes. A scope whose last note goes has its row deleted, as
// the files backend removes its file. Reads are one statement.
type memoryStore struct{ db *DB }

// Memory returns the agents' notes stored in the database.
func (db *DB) Memory() sessions.Memory { return memoryStore{db} }

// Memory implements sessions.Backend.
func (b *Backend) Memory() sessions.Memory { return b.db.Memory() }

// Notes implements sessions.Memory.
func (s memoryStore) Notes(ctx context.Context, scope sessions.MemoryScope) ([]sessions.MemoryNote, error) {
	ctx = withOp(ctx, OpMemory)
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return nil, fmt.Errorf("pgstore: memory: %w", err)
	}
	rows, err := s.db.pool.Query(ctx, `SELECT id, body, created_at, updated_at FROM memory_notes
		WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 ORDER BY id`, scope.AgentID, scope.Kind, scope.ID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: memory %s: %w", scope, err)
	}
	out, err := pgx.CollectRows(rows, scanNote)
	if err != nil {
		return nil, fmt.Errorf("pgstore: memory %s: %w", scope, err)
	}
	if out == nil {
		out = []sessions.MemoryNote{}
	}
	return out, nil
}

// AddNote implements sessions.Memory.
func (s memoryStore) AddNote(ctx context.Context, scope sessions.MemoryScope, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	ctx = withOp(ctx, OpMemory)
	lim, err := sessions.CheckMemoryWrite(scope, text, lim)
	if err != nil {
		return sessions.MemoryNote{}, err
	}
	at = at.UTC().Truncate(time.Microsecond)
	n := sessions.MemoryNote{Text: text, CreatedAt: at, UpdatedAt: at}
	var full error
	err = pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// The upsert locks the scope's row; the count is a second
		// statement so that its snapshot is taken after the lock (a
		// statement's own snapshot predates its wait for the row).
		if err := tx.QueryRow(ctx, `INSERT INTO memory_scopes (agent_id, kind, scope_id, next_id, updated_at)
			VALUES ($1, $2, $3, 1, $4)
			ON CONFLICT (agent_id, kind, scope_id) DO UPDATE SET updated_at = excluded.updated_at
			RETURNING next_id`, scope.AgentID, scope.Kind, scope.ID, at).Scan(&n.ID); err != nil {
			return err
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM memory_notes WHERE agent_id = $1 AND kind = $2 AND scope_id = $3`,
			scope.AgentID, scope.Kind, scope.ID).Scan(&count); err != nil {
			return err
		}
		if count >= lim.MaxNotes {
			full = &sessions.MemoryFullError{Scope: scope, Max: lim.MaxNotes}
			return full
		}
		var b pgx.Batch
		b.Queue(`INSERT INTO memory_notes (agent_id, kind, scope_id, id, body, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)`, scope.AgentID, scope.Kind, scope.ID, n.ID, text, at)
		b.Queue(`UPDATE memory_scopes SET next_id = $4 WHERE agent_id = $1 AND kind = $2 AND scope_id = $3`,
			scope.AgentID, scope.Kind, scope.ID, n.ID+1)
		return tx.SendBatch(ctx, &b).Close()
	})
	switch {
	case full != nil:
		return sessions.MemoryNote{}, full
	case err != nil:
		return sessions.MemoryNote{}, fmt.Errorf("pgstore: memory %s: add: %w", scope, err)
	}
	return n, nil
}

// UpdateNote implements sessions.Memory.
func (s memoryStore) UpdateNote(ctx context.Context, scope sessions.MemoryScope, id int64, text string, at time.Time, lim sessions.MemoryLimits) (sessions.MemoryNote, error) {
	ctx = withOp(ctx, OpMemory)
	if _, err := sessions.CheckMemoryWrite(scope, text, lim); err != nil {
		return sessions.MemoryNote{}, err
	}
	rows, err := s.db.pool.Query(ctx, `UPDATE memory_notes SET body = $5, updated_at = $6
		WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 AND id = $4
		RETURNING id, body, created_at, updated_at`, scope.AgentID, scope.Kind, scope.ID, id, text, at.UTC().Truncate(time.Microsecond))
	if err != nil {
		return sessions.MemoryNote{}, fmt.Errorf("pgstore: memory %s: update %d: %w", scope, id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, scanNote)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.MemoryNote{}, fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
	}
	if err != nil {
		return sessions.MemoryNote{}, fmt.Errorf("pgstore: memory %s: update %d: %w", scope, id, err)
	}
	return n, nil
}

// ForgetNote implements sessions.Memory.
func (s memoryStore) ForgetNote(ctx context.Context, scope sessions.MemoryScope, id int64) error {
	ctx = withOp(ctx, OpMemory)
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return fmt.Errorf("pgstore: memory: %w", err)
	}
	var gone bool
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		// Lock the scope so a concurrent add does not race the
		// removal of an emptied scope.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM memory_scopes WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 FOR UPDATE`,
			scope.AgentID, scope.Kind, scope.ID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM memory_notes WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 AND id = $4`,
			scope.AgentID, scope.Kind, scope.ID, id)
		if err != nil {
			return err
		}
		if gone = tag.RowsAffected() == 0; gone {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM memory_scopes s WHERE agent_id = $1 AND kind = $2 AND scope_id = $3
			AND NOT EXISTS (SELECT 1 FROM memory_notes n WHERE n.agent_id = $1 AND n.kind = $2 AND n.scope_id = $3)`,
			scope.AgentID, scope.Kind, scope.ID)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("pgstore: memory %s: forget %d: %w", scope, id, err)
	case gone:
		return fmt.Errorf("memory %s: %w: %d", scope, sessions.ErrNoNote, id)
	}
	return nil
}

// ForgetScope implements sessions.Memory.
func (s memoryStore) ForgetScope(ctx context.Context, scope sessions.MemoryScope) (int, error) {
	ctx = withOp(ctx, OpMemory)
	if err := sessions.CheckMemoryScope(scope); err != nil {
		return 0, fmt.Errorf("pgstore: memory: %w", err)
	}
	var n int
	err := s.db.pool.QueryRow(ctx, `WITH gone AS (
			DELETE FROM memory_scopes WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 RETURNING 1)
		SELECT count(*) FROM memory_notes WHERE agent_id = $1 AND kind = $2 AND scope_id = $3 AND EXISTS (SELECT 1 FROM gone)`,
		scope.AgentID, scope.Kind, scope.ID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstore: memory %s: forget: %w", scope, err)
	}
	return n, nil
}

// MemoryScopes implements sessions.Memory.
func (s memoryStore) MemoryScopes(ctx context.Context, agentID string) ([]sessions.MemoryScopeInfo, error) {
	ctx = withOp(ctx, OpMemory)
	rows, err := s.db.pool.Query(ctx, `SELECT agent_id, kind, scope_id, count(*), sum(octet_length(body)), max(updated_at)
		FROM memory_notes WHERE $1 = '' OR agent_id = $1
		GROUP BY agent_id, kind, scope_id ORDER BY agent_id, kind, scope_id`, agentID)
	if err != nil {
		return nil, fmt.Errorf("pgstore: memory scopes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sessions.MemoryScopeInfo, error) {
		var i sessions.MemoryScopeInfo
		err := row.Scan(&i.Scope.AgentID, &i.Scope.Kind, &i.Scope.ID, &i.Notes, &i.Bytes, &i.UpdatedAt)
		i.UpdatedAt = i.UpdatedAt.UTC()
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: memory scopes: %w", err)
	}
	if out == nil {
		out = []sessions.MemoryScopeInfo{}
	}
	return out, nil
}

func scanNote(row pgx.CollectableRow) (sessions.MemoryNote, error) {
	var n sessions.MemoryNote
	err := row.Scan(&n.ID, &n.Text, &n.CreatedAt, &n.UpdatedAt)
	n.CreatedAt, n.UpdatedAt = n.CreatedAt.UTC(), n.UpdatedAt.UTC()
	return n, err
}

var _ sessions.Memory = memoryStore{}
