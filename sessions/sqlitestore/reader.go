package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// reader is the pool of reading connections whose QueryContext and
// QueryRowContext run statements prepared once and kept, by query text
// (database/sql prepares a kept statement on each connection of the pool
// the first time it runs there), instead of SQLite parsing and planning
// them at every call. At most maxStmts are kept; statements past them (IN
// lists of every length) run unprepared. Methods of *sql.DB it does not
// shadow run as usual. It is safe for concurrent use.
type reader struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newReader(db *sql.DB) *reader { return &reader{DB: db, stmts: map[string]*sql.Stmt{}} }

// stmt is q's kept statement, prepared now if it is new; nil when the
// cache is full or q does not prepare (the unprepared call reports why).
func (r *reader) stmt(ctx context.Context, q string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.stmts[q]; ok {
		return s
	}
	if len(r.stmts) >= maxStmts {
		return nil
	}
	s, err := r.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	r.stmts[q] = s
	return s
}

func (r *reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := r.stmt(ctx, q); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, q, args...)
}

func (r *reader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := r.stmt(ctx, q); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return r.DB.QueryRowContext(ctx, q, args...)
}

// Close closes the kept statements and the pool.
func (r *reader) Close() error {
	r.mu.Lock()
	var errs []error
	for q, s := range r.stmts {
		errs = append(errs, s.Close())
		delete(r.stmts, q)
	}
	r.mu.Unlock()
	return errors.Join(append(errs, r.DB.Close())...)
}
