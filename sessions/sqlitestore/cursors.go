package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// cursorStore implements sessions.Cursors on the cursors table: one row
// per (scope, name), each set one upsert.
type cursorStore struct{ db *DB }

// Cursors returns the channel cursors stored in the database.
func (db *DB) Cursors() sessions.Cursors { return cursorStore{db} }

var (
	_ sessions.Cursors      = cursorStore{}
	_ sessions.CursorScopes = cursorStore{}
)

// Cursor implements sessions.Cursors.
func (c cursorStore) Cursor(ctx context.Context, scope, name string) (string, bool, error) {
	if err := sessions.CheckCursor(scope, name, ""); err != nil {
		return "", false, err
	}
	var v string
	err := c.db.read.QueryRowContext(ctx, `SELECT value FROM cursors WHERE scope = ? AND name = ?`, scope, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("sqlitestore: cursor %q %q: %w", scope, name, storageErr(err))
	}
	return v, true, nil
}

// CursorsOf implements sessions.Cursors.
func (c cursorStore) CursorsOf(ctx context.Context, scope string) (map[string]string, error) {
	if err := sessions.CheckCursorScope(scope); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := c.db.query(ctx, func(r *sql.Rows) error {
		var name, value string
		if err := r.Scan(&name, &value); err != nil {
			return err
		}
		out[name] = value
		return nil
	}, `SELECT name, value FROM cursors WHERE scope = ?`, scope)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: cursors of %q: %w", scope, err)
	}
	return out, nil
}

// SetCursor implements sessions.Cursors (last writer wins); durable when
// it returns.
func (c cursorStore) SetCursor(ctx context.Context, scope, name, value string) error {
	if err := sessions.CheckCursor(scope, name, value); err != nil {
		return err
	}
	now := c.db.clock().UnixNano()
	err := c.db.w.do(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO cursors (scope, name, value, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			scope, name, value, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: set cursor %q %q: %w", scope, name, err)
	}
	return nil
}

// CursorScopes lists the scopes holding a cursor, sorted
// (sessions.CursorScopes: storage migrate copies them).
func (c cursorStore) CursorScopes(ctx context.Context) ([]string, error) {
	var out []string
	err := c.db.query(ctx, func(r *sql.Rows) error {
		var s string
		if err := r.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	}, `SELECT DISTINCT scope FROM cursors ORDER BY scope`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: cursor scopes: %w", err)
	}
	return out, nil
}
