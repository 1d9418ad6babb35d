package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// counterWriter applies Store.AddCounters off the caller's path (SPEC
// §3.3: routine counters are coalesced, never a reason to hold up a turn):
// AddCounters queues its delta and returns; one goroutine writes what
// queued meanwhile in one lazy transaction (lazy.go), the deltas of one
// session merged into one UPDATE. Every other Store method first waits for
// the counters queued before it (for its session, or for all of them when
// it reads several), so this process reads its own counters as if they had
// been written at once (and Reset archives a session with its last
// counters); other replicas see them within a round trip. A write
// that fails is logged and dropped, as AddCounters' synchronous failures
// were: counters are bookkeeping.
type counterWriter struct {
	db  *DB
	log *zap.Logger

	// mu guards the fields below.
	mu      sync.Mutex
	queue   []counterReq
	queued  uint64            // requests ever queued
	written uint64            // requests written or dropped
	last    map[string]uint64 // by session: the number of its latest request not yet written
	changed chan struct{}     // closed (and replaced) when written moves
	stopped bool

	kick chan struct{} // capacity 1: the writer has work
}

type counterReq struct {
	agentID, key string
	c            sessions.Counters
}

func newCounterWriter(db *DB) *counterWriter {
	return &counterWriter{db: db, log: db.log, last: map[string]uint64{}, changed: make(chan struct{}),
		kick: make(chan struct{}, 1)}
}

// sessionID names a session in counterWriter.last.
func sessionID(agentID, key string) string { return agentID + "\x00" + key }

// add queues c for key; after Close it is written at once.
func (w *counterWriter) add(agentID, key string, c sessions.Counters) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		w.write([]counterReq{{agentID: agentID, key: key, c: c}})
		return
	}
	w.queue = append(w.queue, counterReq{agentID: agentID, key: key, c: c})
	w.queued++
	w.last[sessionID(agentID, key)] = w.queued
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// wait returns once every counter of session (agentID, key) queued before
// it was called is written (or dropped), or when ctx ends; key "" waits
// for every session's.
func (w *counterWriter) wait(ctx context.Context, agentID, key string) error {
	w.mu.Lock()
	target := w.queued
	if key != "" {
		target = w.last[sessionID(agentID, key)] // 0: none pending
	}
	for w.written < target {
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("pgstore: wait for counters: %w", ctx.Err())
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return nil
}

// run writes queued counters until ctx ends, then what is still queued.
func (w *counterWriter) run(ctx context.Context) {
	for {
		select {
		case <-w.kick:
			w.drain()
		case <-ctx.Done():
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			w.drain()
			return
		}
	}
}

// drain writes everything queued.
func (w *counterWriter) drain() {
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	w.write(batch)
	w.mu.Lock()
	w.written += uint64(len(batch))
	for id, n := range w.last {
		if n <= w.written {
			delete(w.last, id)
		}
	}
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
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

// write applies a batch in one lazy transaction.
func (w *counterWriter) write(batch []counterReq) {
	reqs := merge(batch)
	ctx, cancel := call()
	ctx = withOp(ctx, OpCounters)
	defer cancel()
	now := w.db.clock()
	missing := make([]bool, len(reqs))
	err := w.db.lazyBatch(ctx, func(b *pgx.Batch) {
		for i, r := range reqs {
			c := r.c
			b.Queue(addCountersSQL, r.agentID, r.key, c.InputTokens, c.OutputTokens, c.TotalTokens, c.Messages,
				c.ContextTokens, c.Model, c.Provider, now).Exec(func(t pgconn.CommandTag) error {
				missing[i] = t.RowsAffected() == 0
				return nil
			})
		}
	})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			w.log.Warn("counters dropped", zap.Int("sessions", len(reqs)), zap.Error(err))
		}
		return
	}
	for i, r := range reqs {
		if missing[i] {
			w.log.Debug("counters for an unknown session dropped", zap.String("agent_id", r.agentID),
				zap.String("session_key", r.key))
		}
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
