package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// The commit of one group (writegroup.go says how groups are formed): one
// transaction, one pipelined batch, and what happens when it fails.

// commit commits group in one transaction and sets every write's
// outcome. When the server refused a statement (the transaction surely
// did not commit), each write is tried again alone; when the outcome is
// unknown (the connection was lost), every write fails with that error,
// as it would alone: trying again could apply it twice.
func (g *writeGroup) commit(group []*write) {
	var ws []*write
	for _, w := range group {
		if w.fill != nil { // barriers have nothing to write
			ws = append(ws, w)
		}
	}
	switch len(ws) {
	case 0:
		return
	case 1:
		g.try(ws[0].op, ws)
		return
	}
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, func(a, b *write) int { return strings.Compare(a.key, b.key) })
	if committed, refused := g.try(OpGroup, sorted); committed || !refused {
		return
	}
	g.db.log.Debug("group commit refused; committing its writes one by one", zap.Int("writes", len(ws)))
	for _, w := range ws {
		g.try(w.op, []*write{w})
	}
}

// try commits ws in one transaction and sets each write's err: its
// callbacks' first error, or (when the transaction did not commit and the
// write has none) the batch's. It reports whether the transaction
// committed and, if not, whether the server refused it (a statement's
// error or a ROLLBACK), so that nothing of it was applied.
func (g *writeGroup) try(op string, ws []*write) (committed, refused bool) {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), op), groupOpTimeout)
	defer cancel()
	flush := false
	for _, w := range ws {
		flush = flush || w.sync
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if flush {
		b.Queue(genericPlansSQL)
	} else {
		b.Queue(genericPlansLazySQL)
	}
	var pe *pgconn.PgError
	for _, w := range ws {
		w.err = nil
		own := &pgx.Batch{}
		w.fill(own)
		for _, q := range own.QueuedQueries {
			if fn := q.Fn; fn != nil {
				// The callback's error is the write's: returned to pgx
				// it would stop the callbacks after it, COMMIT's too.
				q.Fn = func(br pgx.BatchResults) error {
					err := fn(br)
					if err != nil && w.err == nil {
						w.err = err
					}
					refused = refused || errors.As(err, &pe)
					return nil
				}
			}
			b.QueuedQueries = append(b.QueuedQueries, q)
		}
	}
	b.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
		committed = tag.String() == "COMMIT"
		refused = refused || !committed
		return nil
	})
	err := g.db.pool.SendBatch(ctx, b).Close()
	if committed {
		return true, false
	}
	refused = refused || errors.As(err, &pe)
	if err == nil {
		err = errRolledBack
	}
	for _, w := range ws {
		if w.err == nil {
			w.err = err
		}
	}
	return false, refused
}

// genericPlansSQL makes the statements of a group run their generic plans
// (plan_cache_mode, for the group's transaction only). The writes are
// short statements that find their rows by key, whose generic plan is the
// custom one; but with an array or many parameters the planner estimates
// the generic plan dearer and plans each execution anew: BeginTurn's
// statement took 1.1-1.7 ms of server CPU to plan against 0.3 ms to run,
// the marks 0.1-0.2 ms each (issue 21, pg_stat_statements in
// cmd/gateway-bench). genericPlansLazySQL also commits the group lazily
// (lazy.go).
const (
	genericPlansSQL     = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`
	genericPlansLazySQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('synchronous_commit', 'off', true)`
)

// rowKey names a row for write.key: its table's letter and the columns
// that name it. Rows of different tables never conflict; the order
// between tables only needs to be the same for every group.
func rowKey(table string, id ...string) string {
	return table + "\x00" + strings.Join(id, "\x00")
}

// errRolledBack is a write's error when its transaction did not commit
// without a statement saying why.
var errRolledBack = errors.New("transaction rolled back")

// startWrites starts the DB's group commit; stopWrites (called by Close)
// commits what is queued and stops it.
func (db *DB) startWrites() {
	db.writes = newWriteGroup(db, groupCommitters)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.writes.run(ctx)
	}()
	var once sync.Once
	db.stopWrites = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}
