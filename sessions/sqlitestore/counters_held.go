package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// heldCounters are the counters a Store could not write because the
// database refused them (a full disk, an I/O error, another process's
// lock held past the busy timeout), merged per session, until it takes
// them: the next AddCounters, Flush or the backend's Close writes them
// (the files backend keeps counters in memory until its next flush; SQLite
// has no counter repair at start, so a dropped delta lagged for good).
type heldCounters struct {
	n  atomic.Int32 // len(m): the fast path reads it without mu
	mu sync.Mutex   // guards m; held while writing it, so deltas keep their order
	m  map[heldKey]*heldDelta
}

type heldKey struct{ key, sessionID string }

type heldDelta struct {
	c   sessions.Counters
	now time.Time
}

// merge folds the later delta c (at now) into h.
func (h *heldDelta) merge(c sessions.Counters, now time.Time) {
	h.c.InputTokens += c.InputTokens
	h.c.OutputTokens += c.OutputTokens
	h.c.TotalTokens += c.TotalTokens
	h.c.Messages += c.Messages
	if c.ContextTokens > 0 {
		h.c.ContextTokens = c.ContextTokens
	}
	if c.Model != "" {
		h.c.Model = c.Model
	}
	if c.Provider != "" {
		h.c.Provider = c.Provider
	}
	if now.After(h.now) {
		h.now = now
	}
}

// addCounters is the writer job adding c (at now) to key k's entry; with
// sessionID set, only while that session is still k's current one.
func (s *Store) addCounters(ctx context.Context, k, sessionID string, c sessions.Counters, now time.Time) writeFn {
	return func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		if sessionID != "" && cur.SessionID != sessionID {
			return nil // reset meanwhile: the counts were the old session's
		}
		cur.InputTokens += c.InputTokens
		cur.OutputTokens += c.OutputTokens
		cur.TotalTokens += c.TotalTokens
		cur.MessageCount += c.Messages
		if c.ContextTokens > 0 {
			cur.ContextTokens = c.ContextTokens
		}
		if c.Model != "" {
			cur.Model = c.Model
		}
		if c.Provider != "" {
			cur.Provider = c.Provider
		}
		if now.After(cur.UpdatedAt) {
			cur.UpdatedAt = now
		}
		return s.update(tx, cur)
	}
}

// holdCounters keeps c (at now) for k's current session, read now, after
// the database refused it.
func (s *Store) holdCounters(ctx context.Context, k string, c sessions.Counters, now time.Time, cause error) {
	id := ""
	if e, ok, err := s.get(ctx, s.db.read, k); err == nil && ok {
		id = e.SessionID
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	s.holdLocked(heldKey{k, id}, c, now)
	if s.held.n.Load() == 1 {
		s.log.Warn("counters not written; kept in memory until the database takes writes", zap.String("session_key", k),
			zap.Error(cause))
	}
}

func (s *Store) holdLocked(hk heldKey, c sessions.Counters, now time.Time) {
	if s.held.m == nil {
		s.held.m = map[heldKey]*heldDelta{}
	}
	if h, ok := s.held.m[hk]; ok {
		h.merge(c, now)
		return
	}
	s.held.m[hk] = &heldDelta{c: c, now: now}
	s.held.n.Store(int32(len(s.held.m)))
}

// heldFor queues c behind the counters held for key k, if any are (the
// deltas of one session are written in order: a later context size or
// model must not be overwritten by an earlier one written after it).
func (s *Store) heldFor(k string, c sessions.Counters, now time.Time) bool {
	if s.held.n.Load() == 0 {
		return false
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	s.flushCountersLocked()
	for hk := range s.held.m {
		if hk.key == k {
			s.holdLocked(hk, c, now)
			return true
		}
	}
	return false
}

// flushCountersLocked writes the held counters; those the database
// refuses again stay, others that fail are dropped, logged.
func (s *Store) flushCountersLocked() error {
	var errs []error
	for hk, h := range s.held.m {
		ctx, cancel := call()
		err := s.db.w.doLazy(ctx, s.addCounters(ctx, hk.key, hk.sessionID, h.c, h.now))
		cancel()
		switch {
		case err != nil && retryable(err):
			errs = append(errs, err)
			continue
		case err != nil && !errors.Is(err, sessions.ErrNotFound):
			s.log.Warn("held counters dropped", zap.String("session_key", hk.key), zap.Error(err))
		}
		delete(s.held.m, hk)
	}
	s.held.n.Store(int32(len(s.held.m)))
	if len(errs) > 0 {
		return fmt.Errorf("sqlitestore: %d sessions' counters not written: %w", len(s.held.m), errs[0])
	}
	return nil
}

// flushCounters writes the held counters (Flush, Close).
func (s *Store) flushCounters() error {
	if s.held.n.Load() == 0 {
		return nil
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	return s.flushCountersLocked()
}
