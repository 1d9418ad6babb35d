package filestore

import (
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// delta is a routine update of one session that is applied to the cache at
// once and written with the next flush. Deltas merge, so a reload from disk
// (another process wrote the file) can re-apply what is not written yet.
type delta struct {
	sessionID       string
	in, out, total  int64
	msgs            int
	ctxTokens       int64
	compaction      int64 // raises compactionOffset (counter repair)
	model, provider string
	lastInteraction time.Time // only real input sets it
	updatedAt       time.Time
	origin          *sessions.Origin
}

// apply adds d to e if e is still the session d was recorded for.
func (d *delta) apply(e *sessions.Entry) bool {
	if e.SessionID != d.sessionID {
		return false
	}
	e.InputTokens += d.in
	e.OutputTokens += d.out
	e.TotalTokens += d.total
	e.MessageCount += d.msgs
	if d.ctxTokens > 0 {
		e.ContextTokens = d.ctxTokens
	}
	if d.compaction > e.CompactionOffset {
		e.CompactionOffset = d.compaction
	}
	if d.model != "" {
		e.Model = d.model
	}
	if d.provider != "" {
		e.Provider = d.provider
	}
	if d.lastInteraction.After(e.LastInteractionAt) {
		e.LastInteractionAt = d.lastInteraction
	}
	if d.updatedAt.After(e.UpdatedAt) {
		e.UpdatedAt = d.updatedAt
	}
	if d.origin != nil {
		sessions.ApplyOrigin(e, *d.origin)
	}
	return true
}

// merge folds the newer delta n into d.
func (d *delta) merge(n *delta) {
	if n.sessionID != d.sessionID {
		*d = *n
		return
	}
	d.in += n.in
	d.out += n.out
	d.total += n.total
	d.msgs += n.msgs
	if n.ctxTokens > 0 {
		d.ctxTokens = n.ctxTokens
	}
	d.compaction = max(d.compaction, n.compaction)
	if n.model != "" {
		d.model = n.model
	}
	if n.provider != "" {
		d.provider = n.provider
	}
	if n.lastInteraction.After(d.lastInteraction) {
		d.lastInteraction = n.lastInteraction
	}
	if n.updatedAt.After(d.updatedAt) {
		d.updatedAt = n.updatedAt
	}
	if n.origin != nil {
		d.origin = n.origin
	}
}

// addDeltaLocked applies d to the cached entry of k and queues it for the
// next flush. It returns false when k has no entry.
func (s *Store) addDeltaLocked(k string, d *delta) bool {
	sl, ok := s.slots[k]
	if !ok {
		return false
	}
	if d.sessionID == "" {
		d.sessionID = sl.id()
	}
	if !s.applyDeltaLocked(k, sl, d) {
		return false
	}
	s.queueDeltaLocked(k, d)
	return true
}

// addDeltaToEntryLocked is addDeltaLocked for a caller that has decoded
// the entry e of k's slot sl; e becomes the updated entry.
func (s *Store) addDeltaToEntryLocked(k string, sl slot, e *sessions.Entry, d *delta) bool {
	if d.sessionID == "" {
		d.sessionID = e.SessionID
	}
	if !s.storeDeltaLocked(k, sl, e, d) {
		return false
	}
	s.queueDeltaLocked(k, d)
	return true
}

// queueDeltaLocked marks k changed and merges d, applied to its slot, into
// what the next flush writes.
func (s *Store) queueDeltaLocked(k string, d *delta) {
	s.dirty = true
	s.changed[k] = struct{}{}
	if p, ok := s.pending[k]; ok {
		p.merge(d)
	} else {
		cp := *d
		s.pending[k] = &cp
	}
}

// applyDeltaLocked applies d to k's slot sl, if its entry is still the
// session d was recorded for: on the compact entry when it can
// (patchDelta), else on the decoded entry.
func (s *Store) applyDeltaLocked(k string, sl slot, d *delta) bool {
	if c, applied, ok := patchDelta(sl.c, d); ok {
		if applied {
			s.setSlotLocked(k, sl, c)
		}
		return applied
	}
	e := sl.entry()
	return s.storeDeltaLocked(k, sl, &e, d)
}

// storeDeltaLocked applies d to e, the decoded entry of k's slot sl, and
// stores the result in the slot, if e is still the session d was recorded
// for.
func (s *Store) storeDeltaLocked(k string, sl slot, e *sessions.Entry, d *delta) bool {
	if !d.apply(e) {
		return false
	}
	c, err := packEntry(e)
	if err != nil {
		s.log.Error("session update dropped", zap.String("session_key", k), zap.Error(err))
		return false
	}
	s.setSlotLocked(k, sl, c)
	return true
}

// setSlotLocked replaces k's slot sl with one holding c.
func (s *Store) setSlotLocked(k string, sl slot, c compactEntry) {
	nsl := newSlot(c)
	nsl.repair = sl.repair
	s.slots[k] = nsl
}

// AddCounters records usage of key's current session. It never writes
// sessions.json itself: the update is visible to readers at once and reaches
// the file with the next flush (at most FlushInterval later, and at Close).
// It does not move lastInteractionAt.
func (s *Store) AddCounters(key routing.Key, c sessions.Counters) {
	k, err := s.keyString(key)
	if err != nil {
		s.log.Warn("counters dropped", zap.Error(err))
		return
	}
	d := &delta{in: c.InputTokens, out: c.OutputTokens, total: c.TotalTokens, msgs: c.Messages,
		ctxTokens: c.ContextTokens, model: c.Model, provider: c.Provider, updatedAt: s.m.now()}
	s.repairKey(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(); err != nil {
		s.log.Warn("counters dropped", zap.String("session_key", k), zap.Error(err))
		return
	}
	if !s.addDeltaLocked(k, d) {
		s.log.Debug("counters for an unknown session dropped", zap.String("session_key", k))
	}
}

// hasPending reports whether a flush has work to do.
func (s *Store) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty || len(s.pending) > 0
}
