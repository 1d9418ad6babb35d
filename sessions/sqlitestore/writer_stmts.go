package sqlitestore

import (
	"context"
	"database/sql"
)

// maxStmts bounds the statements the writer keeps prepared. The writes
// use a few dozen constant statements; the bound only stops statements
// built from their arguments (IN lists of varying length) from growing the
// cache without end: past it they are prepared at each use, as before.
const maxStmts = 512

// wtx is the writer's transaction as a job sees it: a *sql.Tx whose Exec,
// Query and QueryRow run statements the writer prepared once on its
// connection and keeps (stmtCache), instead of SQLite parsing and planning
// the statement again at every call (issue 28: parsing was a large part
// of the writer's time). Methods of *sql.Tx it does not shadow run as
// usual.
type wtx struct {
	*sql.Tx
	c *stmtCache
}

// stmtCache is the writer's prepared statements, by query text. Only the
// writer goroutine uses it (no lock). A statement first seen inside a
// transaction runs unprepared there and is prepared after the commit,
// when the one writing connection is free again (preparing on the
// connection pool while the transaction holds its only connection would
// wait for ever).
type stmtCache struct {
	db     *sql.DB
	stmts  map[string]*sql.Stmt
	missed map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}, missed: map[string]bool{}}
}

// get is q's prepared statement in tx, or nil (q runs unprepared and is
// prepared after the transaction).
func (c *stmtCache) get(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	if s := c.stmts[q]; s != nil {
		return tx.StmtContext(ctx, s)
	}
	if len(c.stmts)+len(c.missed) < maxStmts {
		c.missed[q] = true
	}
	return nil
}

// prepareMissed prepares the statements run unprepared in the last
// transaction; the writer calls it between transactions. A statement that
// does not prepare (a job's bad SQL) is forgotten: the job saw its error.
func (c *stmtCache) prepareMissed() {
	for q := range c.missed {
		if s, err := c.db.Prepare(q); err == nil {
			c.stmts[q] = s
		}
		delete(c.missed, q)
	}
}

// close closes the prepared statements (the writer's last act).
func (c *stmtCache) close() {
	for q, s := range c.stmts {
		_ = s.Close()
		delete(c.stmts, q)
	}
}

func (t *wtx) Exec(q string, args ...any) (sql.Result, error) {
	return t.ExecContext(context.Background(), q, args...)
}

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if s := t.c.get(ctx, t.Tx, q); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

func (t *wtx) Query(q string, args ...any) (*sql.Rows, error) {
	return t.QueryContext(context.Background(), q, args...)
}

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := t.c.get(ctx, t.Tx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

func (t *wtx) QueryRow(q string, args ...any) *sql.Row {
	return t.QueryRowContext(context.Background(), q, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := t.c.get(ctx, t.Tx, q); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}
