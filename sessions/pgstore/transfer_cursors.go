package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

var _ sessions.CursorScopes = cursorStore{}

// CursorScopes lists the scopes with a cursor, sorted (a migration copies
// them: sessions/transfer.CopyCursors).
func (c cursorStore) CursorScopes(ctx context.Context) ([]string, error) {
	rows, err := c.db.pool.Query(ctx, `SELECT DISTINCT scope FROM cursors ORDER BY scope`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: cursor scopes: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgstore: cursor scopes: %w", err)
	}
	return out, nil
}
