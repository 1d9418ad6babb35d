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
// as it would alone: trying again could apply it twice. A statement that
// waited groupLockTimeout for a row lock (lock_timeout, set on the pools),
// or that the statement timeout cancelled (timedOut), fails its write and
// every other write of that row (write.key: they would wait for it again)
// with that error, and the rest are committed
// together again: a row some transaction holds for long costs every
// other session's writes one lock timeout, not one per write tried alone
// (each as long as the statement timeout before the pools set
// lock_timeout, 30 s by default) — and only when it is first met: the
// row's later writes wait for it on the side path (writegroup_side.go).
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
		g.tryAlone(ws[0])
		return
	}
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, func(a, b *write) int { return strings.Compare(a.key, b.key) })
	committed, refused := g.try(OpGroup, sorted)
	for !committed && refused {
		locked := lockedWrite(sorted)
		if locked == nil {
			break
		}
		g.db.log.Warn("group commit met a locked row or a statement timeout; its writes fail, the others are committed again",
			zap.String("op", locked.op), zap.Duration("lock_timeout", groupLockTimeout), zap.Error(locked.met))
		g.noteHeld(locked) // its next writes wait on the side (writegroup_side.go)
		failed := locked.met
		lockedRow := func(w *write) bool { return w == locked || (locked.key != "" && w.key == locked.key) }
		for _, w := range sorted {
			if lockedRow(w) {
				w.err = failed
			}
		}
		sorted = slices.DeleteFunc(sorted, lockedRow)
		ws = slices.DeleteFunc(ws, lockedRow)
		switch len(sorted) {
		case 0:
			return
		case 1:
			g.tryAlone(sorted[0])
			return
		}
		committed, refused = g.try(OpGroup, sorted)
	}
	if committed || !refused {
		return
	}
	g.db.log.Debug("group commit refused; committing its writes one by one", zap.Int("writes", len(ws)))
	for _, w := range ws {
		g.tryAlone(w)
	}
}

// tryAlone commits w in a transaction of its own. A write that waited
// too long (timedOut) is logged, as a group that met one is:
// its caller may drop it (counters) or try again later (a turn), and an
// operator whose transaction holds a session's row should find why that
// session's writes fail.
func (g *writeGroup) tryAlone(w *write) {
	g.try(w.op, []*write{w})
	if timedOut(w) {
		g.noteHeld(w)
		g.db.log.Warn("write met a locked row or a statement timeout and failed", zap.String("op", w.op),
			zap.Duration("lock_timeout", groupLockTimeout), zap.Error(w.met))
	}
}

// lockedWrite is the first of ws that timedOut in the last try; nil if
// none did.
func lockedWrite(ws []*write) *write {
	for _, w := range ws {
		if timedOut(w) {
			return w
		}
	}
	return nil
}

// timedOut reports whether w's own statement waited too long in the last
// try: for a row lock (lock_not_available), or as long as the statement
// timeout allows (query_canceled: with a statementTimeout no longer than
// groupLockTimeout it ends a wait for a row lock first; and a write whose
// statement ran that long would run as long again, to the same end, tried
// alone).
func timedOut(w *write) bool {
	var pe *pgconn.PgError
	return errors.As(w.met, &pe) && (pe.Code == lockNotAvailable || pe.Code == queryCanceled)
}

// The SQLSTATEs of a statement that gave up waiting for a lock
// (lock_timeout) and of one cancelled (statement_timeout, or a cancel
// request).
const (
	lockNotAvailable = "55P03"
	queryCanceled    = "57014"
)

// try commits ws in one transaction and sets each write's err: its
// callbacks' first error, or (when the transaction did not commit and the
// write has none) the batch's. It reports whether the transaction
// committed and, if not, whether the server refused it (a statement's
// error, or the commit's), so that nothing of it was applied.
//
// The transaction is the batch's implicit one: pgx pipelines the
// statements and ends them with one Sync, and the server runs everything
// up to a Sync as one transaction, committed at the Sync unless a
// statement failed. No BEGIN, COMMIT or set_config travels with the
// statements: the pools the group commits through carry plan_cache_mode
// (and, for lazy writes, synchronous_commit) as connection parameters
// (writegroup_pools.go), three statements fewer per group (issue 21). pgx
// keeps the first error of any statement as the batch's, whatever a
// callback made of it, so Close reports the server's refusal; a
// callback's own error fails its write only.
func (g *writeGroup) try(op string, ws []*write) (committed, refused bool) {
	ctx, cancel := context.WithTimeout(withOp(context.Background(), op), groupOpTimeout)
	defer cancel()
	flush := false
	for _, w := range ws {
		flush = flush || w.sync
	}
	// Each write fills the group's batch directly; its statements'
	// callbacks are then replaced by one that runs them in turn (pgx
	// calls a batch's callbacks in order, once each), so a group costs
	// the same few allocations whatever its statements (issue 21).
	b := &pgx.Batch{}
	c := &tryCalls{}
	call := c.call
	for _, w := range ws {
		w.err, w.met = nil, nil
		from := len(b.QueuedQueries)
		w.fill(b)
		for _, q := range b.QueuedQueries[from:] {
			c.fns = append(c.fns, q.Fn)
			c.owners = append(c.owners, w)
			q.Fn = call
		}
	}
	err := g.db.writePool(flush).SendBatch(ctx, b).Close()
	if err == nil {
		return true, false
	}
	var pe *pgconn.PgError
	refused = errors.As(err, &pe)
	for _, w := range ws {
		if w.err == nil {
			w.err = err
		}
	}
	return false, refused
}

// tryCalls runs the callbacks of a try's statements, in the batch's order:
// fns[i] (nil: the statement's result is read and dropped) on behalf of
// owners[i].
type tryCalls struct {
	fns    []func(pgx.BatchResults) error
	owners []*write
	next   int
	// refusedSeen: a statement's refusal was met (by the write that
	// owns it; those after it are skipped by the server).
	refusedSeen bool
}

// call runs the next statement's callback. Its error is the write's:
// returned to pgx it would stop the callbacks after it. A statement the
// server refused is remembered as met by the first write to see the
// refusal (its own statement's: those after it are skipped by the
// server).
func (c *tryCalls) call(br pgx.BatchResults) error {
	i := c.next
	c.next++
	w := c.owners[i]
	var err error
	if fn := c.fns[i]; fn != nil {
		err = fn(br)
	} else {
		_, err = br.Exec()
	}
	if err == nil {
		return nil // (errors.As's target would cost an allocation a statement)
	}
	if w.err == nil {
		w.err = err
	}
	var pe *pgconn.PgError
	if !c.refusedSeen && errors.As(err, &pe) {
		c.refusedSeen, w.met = true, err
	}
	return nil
}

// rowKey names a row for write.key: its table's letter and the columns
// that name it. Rows of different tables never conflict; the order
// between tables only needs to be the same for every group.
func rowKey(table string, id ...string) string {
	// table + "\x00" + strings.Join(id, "\x00"), in one allocation.
	n := len(table) + 1
	for _, s := range id {
		n += len(s) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(table)
	b.WriteByte(0)
	for i, s := range id {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(s)
	}
	return b.String()
}

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
