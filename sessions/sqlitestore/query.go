package sqlitestore

import (
	"context"
	"database/sql"
)

// query runs a read on the reading pool and calls each for every row.
func (db *DB) query(ctx context.Context, each func(*sql.Rows) error, q string, args ...any) error {
	return queryOn(ctx, db.read, each, q, args...)
}

// querier is the reading pool or the writer's transaction.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func queryOn(ctx context.Context, on querier, each func(*sql.Rows) error, q string, args ...any) error {
	rows, err := on.QueryContext(ctx, q, args...)
	if err != nil {
		return storageErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return storageErr(rows.Err())
}
