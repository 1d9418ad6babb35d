package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// DefaultCommitters is how many groups an Appender commits at once.
const DefaultCommitters = 4

// DefaultMaxGroup caps how many appends an Appender commits together.
const DefaultMaxGroup = 64

// Appender groups transcript appends of many callers, across sessions, into
// shared commits: each group is one pipelined batch, so it costs one round
// trip and one WAL flush, and N concurrent appends hold at most
// DefaultCommitters connections instead of N (what matters when several
// replicas share a server's max_connections). PostgreSQL already shares WAL
// flushes between concurrent commits of separate connections, so on a
// server with connections to spare DB.Append is as fast; see the
// benchmarks. A lone append costs what DB.Append does.
//
// Run owns the goroutines that commit; Append must not be called after
// Run returns (it then fails with ErrAppenderStopped).
type Appender struct {
	db         *DB
	reqs       chan *appendReq
	stopped    chan struct{}
	maxGroup   int
	committers int
	grouped    atomic.Int64 // groups of more than one append committed together
}

// ErrAppenderStopped is returned by Append once Run has returned.
var ErrAppenderStopped = errors.New("pgstore: appender stopped")

type appendReq struct {
	sessionID string
	sql       string // appendSQL or chainSQL
	args      []any
	lazy      bool // may commit lazily (lazy.go)
	// fence, when set, is checked in the append's transaction first
	// (turns.go): a turn whose session lease moved on appends nothing.
	fence *sessions.Fence
	seqs  []int64
	err   error
	done  chan struct{}
}

// NewAppender returns an appender committing up to maxGroup appends
// together (DefaultMaxGroup when <= 0). Start it with Run.
func (db *DB) NewAppender(maxGroup int) *Appender {
	if maxGroup <= 0 {
		maxGroup = DefaultMaxGroup
	}
	return &Appender{db: db, reqs: make(chan *appendReq), stopped: make(chan struct{}), maxGroup: maxGroup,
		committers: DefaultCommitters}
}

// Append is DB.Append through the group commit: it returns once the
// entries are committed (durable) or failed. A failed append in a group
// never fails the others: the group is then retried one append at a time.
func (a *Appender) Append(ctx context.Context, sessionID string, entries ...TranscriptEntry) ([]int64, error) {
	args, err := a.db.appendArgs(sessionID, entries)
	if err != nil || args == nil {
		return nil, err
	}
	return a.submit(ctx, sessionID, appendSQL, args, false)
}

// submit hands one append statement (returning seq numbers) to the group
// commit and waits for its outcome. A lazy append is committed without
// waiting for the WAL flush when its whole group is lazy; a group with a
// synchronous append is synchronous for all.
func (a *Appender) submit(ctx context.Context, sessionID, sql string, args []any, lazy bool) ([]int64, error) {
	r := &appendReq{sessionID: sessionID, sql: sql, args: args, lazy: lazy, done: make(chan struct{})}
	if f, ok := sessions.FenceFrom(ctx); ok {
		r.fence = &f
	}
	select {
	case a.reqs <- r:
	case <-a.stopped:
		return nil, ErrAppenderStopped
	case <-ctx.Done():
		return nil, fmt.Errorf("pgstore: append %s: %w", sessionID, ctx.Err())
	}
	// Once handed over, the request is committed or failed by Run even if
	// ctx ends: the caller must learn which, so it waits.
	<-r.done
	return r.seqs, r.err
}

// Run commits groups until ctx is done, with up to committers groups in
// flight at once (each on its own connection), so a slow flush does not
// stall the appends gathering behind it. Appends handed over before ctx
// ends are finished first.
func (a *Appender) Run(ctx context.Context) error {
	defer close(a.stopped)
	var wg sync.WaitGroup
	for range a.committers {
		wg.Go(func() { a.loop(ctx) })
	}
	wg.Wait()
	return nil
}

func (a *Appender) loop(ctx context.Context) {
	for {
		var first *appendReq
		select {
		case first = <-a.reqs:
		case <-ctx.Done():
			return
		}
		group := []*appendReq{first}
	gather:
		for len(group) < a.maxGroup {
			select {
			case r := <-a.reqs:
				group = append(group, r)
			default:
				break gather
			}
		}
		// The commit is not cut short by ctx: callers are waiting for it.
		a.commit(withOp(context.WithoutCancel(ctx), OpAppend), group)
	}
}

// commit sends a group as one pipelined batch: PostgreSQL runs a batch's
// statements in one implicit transaction (an explicit one, committed
// lazily, when every append of the group is lazy), so it costs one round
// trip and one commit. If it fails, each append is retried alone.
func (a *Appender) commit(ctx context.Context, group []*appendReq) {
	defer func() {
		for _, r := range group {
			close(r.done)
		}
	}()
	if len(group) > 1 {
		// Every statement locks its session's head row until the commit:
		// taking them in session order keeps two groups in flight from
		// deadlocking. The sort is stable, so one session's appends keep
		// their order.
		ordered := slices.Clone(group)
		slices.SortStableFunc(ordered, func(x, y *appendReq) int { return strings.Compare(x.sessionID, y.sessionID) })
		lazy := !slices.ContainsFunc(group, func(r *appendReq) bool { return !r.lazy })
		b := &pgx.Batch{}
		if lazy {
			b.Queue(`BEGIN`)
			b.Queue(`SET LOCAL synchronous_commit = off`)
		}
		for _, r := range ordered {
			if r.fence != nil {
				queueFence(b, *r.fence)
			}
			b.Queue(r.sql, r.args...)
		}
		if lazy {
			b.Queue(`COMMIT`)
		}
		res := a.db.pool.SendBatch(ctx, b)
		var err error
		if lazy {
			if _, err = res.Exec(); err == nil {
				_, err = res.Exec()
			}
		}
		for _, r := range ordered {
			if err != nil {
				break
			}
			if r.fence != nil {
				if _, err = res.Exec(); err != nil {
					break
				}
			}
			var rows pgx.Rows
			if rows, err = res.Query(); err == nil {
				r.seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			}
			if err != nil {
				break
			}
		}
		if cerr := res.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			a.grouped.Add(1)
			return
		}
		a.db.log.Debug("group append failed, retrying one by one")
	}
	for _, r := range group {
		r.seqs, r.err = a.db.commitOne(ctx, r)
		if ferr, ok := fenced(r.err); ok {
			r.err = fmt.Errorf("pgstore: append %s: %w", r.sessionID, ferr)
		}
	}
}

// commitOne commits one append alone.
func (db *DB) commitOne(ctx context.Context, r *appendReq) ([]int64, error) {
	if !r.lazy && r.fence == nil {
		return db.exec(ctx, r.sessionID, r.sql, r.args)
	}
	var seqs []int64
	fill := func(b *pgx.Batch) {
		if r.fence != nil {
			queueFence(b, *r.fence)
		}
		b.Queue(r.sql, r.args...).Query(func(rows pgx.Rows) error {
			var err error
			seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
	}
	var err error
	if r.lazy {
		err = db.lazyBatch(ctx, fill)
	} else {
		// BEGIN/COMMIT in the batch: the fence and the append commit
		// together (a batch alone is one implicit transaction too, but
		// stating it keeps it so when statements are added).
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		fill(b)
		b.Queue(`COMMIT`)
		err = db.pool.SendBatch(ctx, b).Close()
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: append %s: %w", r.sessionID, err)
	}
	return seqs, nil
}
