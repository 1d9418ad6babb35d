package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// counterLinger is how long queued counters wait for more before the
// writer writes them (SPEC §3.3: the files backend coalesces counters in
// memory for up to a second).
const counterLinger = time.Second

// counterWriter applies Store.AddCounters off the caller's path (SPEC
// §3.3: routine counters are coalesced, never a reason to hold up a turn):
// AddCounters queues its delta and returns. A session's next Begin takes
// its queued deltas and writes them in its own transaction, before the
// touch (no round trip of their own); one goroutine writes what nobody
// took, counterLinger after it was queued, in one lazy transaction
// (lazy.go), the deltas of one session merged into one UPDATE. Every other
// Store method first waits for the counters queued before it (for its
// session, or for all of them when it reads several), asking the writer to
// write at once, so this process reads its own counters as if they had
// been written at once (and Reset archives a session with its last
// counters); other replicas see them at the session's next turn or within
// counterLinger. A write that fails is logged and dropped, as AddCounters'
// synchronous failures were: counters are bookkeeping.
type counterWriter struct {
	db     *DB
	log    *zap.Logger
	linger time.Duration

	// mu guards the fields below. A Begin takes its session's requests
	// and waits for its session's outstanding ones by session (queue,
	// outBy), not by scanning every session's: with thousands of active
	// sessions a scan per message was the cost of all of them.
	mu      sync.Mutex
	queue   map[string][]counterReq // by session: queued, not taken yet, in order
	queued  int                     // requests in queue
	seq     uint64                  // requests ever queued
	out     map[uint64]counterOut   // by seq: requests queued or being written
	outBy   map[string][]uint64     // by session: the seqs of its requests in out
	changed chan struct{}           // closed (and replaced) when requests are written or dropped
	stopped bool

	kick   chan struct{} // capacity 1: the writer has work
	urgent chan struct{} // capacity 1: a reader waits: write now
}

type counterReq struct {
	agentID, key string
	c            sessions.Counters
	seq          uint64
}

// counterOut is an outstanding request: its session and whether it was
// taken (is being written).
type counterOut struct {
	session string
	taken   bool
}

func newCounterWriter(db *DB) *counterWriter {
	return &counterWriter{db: db, log: db.log, linger: counterLinger, queue: map[string][]counterReq{},
		out: map[uint64]counterOut{}, outBy: map[string][]uint64{},
		changed: make(chan struct{}), kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1)}
}

// sessionID names a session in counterWriter.out.
func sessionID(agentID, key string) string { return agentID + "\x00" + key }

// add queues c for key; after Close it is written at once.
func (w *counterWriter) add(agentID, key string, c sessions.Counters) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		w.write([]counterReq{{agentID: agentID, key: key, c: c}})
		return
	}
	w.seq++
	session := sessionID(agentID, key)
	w.queue[session] = append(w.queue[session], counterReq{agentID: agentID, key: key, c: c, seq: w.seq})
	w.queued++
	w.out[w.seq] = counterOut{session: session}
	w.outBy[session] = append(w.outBy[session], w.seq)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// outstandingLocked reports whether a request up to seq upTo of session
// (any session when "") is queued or being written; taken restricts it to
// those being written.
func (w *counterWriter) outstandingLocked(upTo uint64, session string, taken bool) bool {
	if session != "" {
		for _, seq := range w.outBy[session] {
			if seq <= upTo && (!taken || w.out[seq].taken) {
				return true
			}
		}
		return false
	}
	for seq, o := range w.out {
		if seq <= upTo && (!taken || o.taken) {
			return true
		}
	}
	return false
}

// waitLocked waits, with w.mu held (and released meanwhile), until
// nothing is outstanding that outstandingLocked(upTo, session, taken)
// reports, asking the writer to write at once.
func (w *counterWriter) waitLocked(ctx context.Context, upTo uint64, session string, taken bool) error {
	for w.outstandingLocked(upTo, session, taken) {
		ch := w.changed
		w.mu.Unlock()
		select {
		case w.urgent <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			return fmt.Errorf("pgstore: wait for counters: %w", ctx.Err())
		}
		w.mu.Lock()
	}
	return nil
}

// wait returns once every counter of session (agentID, key) queued before
// it was called is written (or dropped), or when ctx ends; key "" waits
// for every session's.
func (w *counterWriter) wait(ctx context.Context, agentID, key string) error {
	session := ""
	if key != "" {
		session = sessionID(agentID, key)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waitLocked(ctx, w.seq, session, false)
}

// take hands the counters queued for session (agentID, key) to a caller
// that writes them in its own transaction and then calls finish, whatever
// the outcome; it first waits for those the writer is writing.
func (w *counterWriter) take(ctx context.Context, agentID, key string) ([]counterReq, error) {
	session := sessionID(agentID, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.waitLocked(ctx, w.seq, session, true); err != nil {
		return nil, err
	}
	return w.takeLocked(session), nil
}

// takeLocked removes session's requests (every one when "") from the
// queue and marks them taken.
func (w *counterWriter) takeLocked(session string) []counterReq {
	if session != "" {
		mine := w.queue[session]
		delete(w.queue, session)
		w.markTakenLocked(session, mine)
		return mine
	}
	mine := make([]counterReq, 0, w.queued)
	for s, reqs := range w.queue {
		mine = append(mine, reqs...)
		w.markTakenLocked(s, reqs)
	}
	clear(w.queue)
	return mine
}

// markTakenLocked marks reqs, session's, taken.
func (w *counterWriter) markTakenLocked(session string, reqs []counterReq) {
	w.queued -= len(reqs)
	for _, r := range reqs {
		w.out[r.seq] = counterOut{session: session, taken: true}
	}
}

// finish records that reqs, taken, were written or dropped.
func (w *counterWriter) finish(reqs []counterReq) {
	if len(reqs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range reqs {
		session := w.out[r.seq].session
		delete(w.out, r.seq)
		seqs := slices.DeleteFunc(w.outBy[session], func(s uint64) bool { return s == r.seq })
		if len(seqs) == 0 {
			delete(w.outBy, session)
		} else {
			w.outBy[session] = seqs
		}
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// run writes queued counters until ctx ends, then what is still queued:
// each batch counterLinger after the first of it was queued, or at once
// when a reader waits.
func (w *counterWriter) run(ctx context.Context) {
	for {
		select {
		case <-w.kick:
		case <-ctx.Done():
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			w.drain()
			return
		}
		if w.linger > 0 {
			t := time.NewTimer(w.linger)
			select {
			case <-t.C:
			case <-w.urgent:
			case <-ctx.Done():
			}
			t.Stop()
		}
		w.drain()
	}
}

// drain writes everything queued.
func (w *counterWriter) drain() {
	w.mu.Lock()
	batch := w.takeLocked("")
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	defer w.finish(batch)
	w.write(batch)
}

// merge folds the deltas of each session into one, in the order they
// were queued (the last ContextTokens, Model and Provider set win, as
// applying them one by one would leave), sorted by session so that
// concurrent writers lock rows in one order.
func merge(batch []counterReq) []counterReq {
	type id struct{ agent, key string }
	at := map[id]int{}
	var out []counterReq
	for _, r := range batch {
		i, ok := at[id{r.agentID, r.key}]
		if !ok {
			at[id{r.agentID, r.key}] = len(out)
			out = append(out, r)
			continue
		}
		m := &out[i].c
		m.InputTokens += r.c.InputTokens
		m.OutputTokens += r.c.OutputTokens
		m.TotalTokens += r.c.TotalTokens
		m.Messages += r.c.Messages
		if r.c.ContextTokens > 0 {
			m.ContextTokens = r.c.ContextTokens
		}
		if r.c.Model != "" {
			m.Model = r.c.Model
		}
		if r.c.Provider != "" {
			m.Provider = r.c.Provider
		}
	}
	slices.SortFunc(out, func(a, b counterReq) int {
		return cmp.Or(cmp.Compare(a.agentID, b.agentID), cmp.Compare(a.key, b.key))
	})
	return out
}

// write applies a batch through the group commit, lazily committed, one
// write per session (each keyed by its entry's row: writegroup.go).
func (w *counterWriter) write(batch []counterReq) {
	ctx, cancel := call()
	ctx = withOp(ctx, OpCounters)
	defer cancel()
	reqs := merge(batch)
	ws := make([]*write, len(reqs))
	for i, r := range reqs {
		ws[i] = &write{op: OpCounters, key: rowKey("e", r.agentID, r.key), fill: func(b *pgx.Batch) { w.queueBatch(b, []counterReq{r}) }}
	}
	if err := w.db.writes.doAll(ctx, ws); err != nil && !errors.Is(err, context.Canceled) {
		w.log.Warn("counters dropped", zap.Int("requests", len(batch)), zap.Error(err))
	}
}

// queueBatch queues batch's updates into b, one per session, in session
// order.
func (w *counterWriter) queueBatch(b *pgx.Batch, batch []counterReq) {
	now := w.db.clock()
	for _, r := range merge(batch) {
		c := r.c
		b.Queue(addCountersSQL, r.agentID, r.key, c.InputTokens, c.OutputTokens, c.TotalTokens, c.Messages,
			c.ContextTokens, c.Model, c.Provider, now).Exec(func(t pgconn.CommandTag) error {
			if t.RowsAffected() == 0 {
				w.log.Debug("counters for an unknown session dropped", zap.String("agent_id", r.agentID),
					zap.String("session_key", r.key))
			}
			return nil
		})
	}
}

// startCounters starts the DB's counter writer; stopCounters (called by
// Close) writes what is queued and stops it.
func (db *DB) startCounters() {
	db.counters = newCounterWriter(db)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.counters.run(ctx)
	}()
	var once sync.Once
	db.stopCounters = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}
