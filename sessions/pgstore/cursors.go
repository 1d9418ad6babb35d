package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// cursorStore implements sessions.Cursors on the cursors table (migration
// 00004): one row per (scope, name), each set one upsert.
type cursorStore struct{ db *DB }

// Cursors returns the channel cursors stored in the database, such as the
// Telegram getUpdates offset of one bot account (scope
// "telegram:<account>", name "offset").
func (db *DB) Cursors() sessions.Cursors { return cursorStore{db} }

// Cursor implements sessions.Cursors.
func (c cursorStore) Cursor(ctx context.Context, scope, name string) (string, bool, error) {
	ctx = withOp(ctx, OpCursors)
	if err := sessions.CheckCursor(scope, name, ""); err != nil {
		return "", false, err
	}
	var v string
	err := c.db.pool.QueryRow(ctx, `SELECT value FROM cursors WHERE scope = $1 AND name = $2`, scope, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("pgstore: cursor %q %q: %w", scope, name, err)
	}
	return v, true, nil
}

// CursorsOf implements sessions.Cursors.
func (c cursorStore) CursorsOf(ctx context.Context, scope string) (map[string]string, error) {
	ctx = withOp(ctx, OpCursors)
	if err := sessions.CheckCursorScope(scope); err != nil {
		return nil, err
	}
	rows, err := c.db.pool.Query(ctx, `SELECT name, value FROM cursors WHERE scope = $1`, scope)
	if err != nil {
		return nil, fmt.Errorf("pgstore: cursors of %q: %w", scope, err)
	}
	out := map[string]string{}
	var name, value string
	_, err = pgx.ForEachRow(rows, []any{&name, &value}, func() error {
		out[name] = value
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: cursors of %q: %w", scope, err)
	}
	return out, nil
}

// SetCursor implements sessions.Cursors (last writer wins).
func (c cursorStore) SetCursor(ctx context.Context, scope, name, value string) error {
	ctx = withOp(ctx, OpCursors)
	if err := sessions.CheckCursor(scope, name, value); err != nil {
		return err
	}
	_, err := c.db.pool.Exec(ctx, `INSERT INTO cursors (scope, name, value, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		scope, name, value, c.db.clock())
	if err != nil {
		return fmt.Errorf("pgstore: set cursor %q %q: %w", scope, name, err)
	}
	return nil
}

var _ sessions.Cursors = cursorStore{}
