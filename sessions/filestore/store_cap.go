package filestore

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// maintenance.maxEntries is enforced as sessions are created (issue 22):
// the commit that adds an entry past the cap archives the oldest idle
// sessions in the same index write, so the count never passes the cap
// when a creation returns (a sweep after the fact let 12,000 creations
// reach 10,543 entries with maxEntries 5000, and never capped sessions
// created in the last minute). Idle means no work is pending for the
// session in the ingress journal: no record waiting for or in a turn
// (every turn runs records, internal work included), no reply not
// completely delivered. Subagent sessions go first, then the least
// recently updated. A pass archives capSlack(limit) more than needed, so
// a burst of creations sorts the index once per that many. When the
// sessions over the cap all have pending work, the creation still
// happens (a message is never refused for it), the count stays over the
// cap, and a warning says how far (at most once per capWarnEvery); later
// creations archive them once their work is done.

// capWarnEvery spaces the warnings of a cap that cannot be met.
const capWarnEvery = time.Minute

// busyKeys returns the session keys with pending work in the ingress
// journal, or ok false when this process has no journal open (then the
// sessions touched within sessions.ActiveWindow count as busy: nothing
// shows their work).
func (m *Manager) busyKeys() (keys map[string]struct{}, ok bool) {
	m.jmu.Lock()
	j := m.journal
	m.jmu.Unlock()
	if j == nil || j.openErr != nil {
		return nil, false
	}
	return j.busyKeys(), true
}

// busyKeys lists the session keys of pending records and outstanding
// replies, in their written form and canonical.
func (j *Journal) busyKeys() map[string]struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[string]struct{}, len(j.recs)+len(j.replies))
	add := func(k string) {
		if k == "" {
			return
		}
		out[k] = struct{}{}
		if rk, err := routing.Parse(k); err == nil {
			out[rk.Canonical().String()] = struct{}{}
		}
	}
	for _, r := range j.recs {
		add(r.SessionKey)
	}
	for _, r := range j.replies {
		add(r.SessionKey)
	}
	return out
}

// capLocked archives sessions of this op's store so that it holds at
// most maintenance.maxEntries entries once the op's puts apply; it runs
// inside the commit of an op that created an entry (created). In warn
// mode, or in a passive process, it only logs.
func (o *opTx) capLocked(created string) error {
	s := o.tx.s
	cfg := s.m.maint.Load()
	limit := cfg.MaxEntries
	count := len(s.slots)
	for k, e := range o.puts {
		_, had := s.slots[k]
		switch {
		case e != nil && !had:
			count++
		case e == nil && had:
			count--
		}
	}
	if limit <= 0 || count <= limit {
		return nil
	}
	over := count - limit
	if cfg.Mode == sessions.MaintenanceWarn || s.m.opts.Passive {
		s.warnCap(count, limit, over, "mode warn: nothing archived")
		return nil
	}
	busy, known := s.m.busyKeys()
	now := o.now()
	type cand struct {
		k       string
		sl      slot
		updated time.Time
	}
	cands := make([]cand, 0, len(s.slots))
	for k, sl := range s.slots {
		if k == created {
			continue
		}
		if _, touched := o.puts[k]; touched {
			continue
		}
		updated := sl.updatedAt()
		if _, b := busy[k]; b || !known && recentlyActive(updated, sl.lastInteractionAt(), now) {
			continue
		}
		cands = append(cands, cand{k, sl, updated})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		as, bs := isSubagentKey(a.k), isSubagentKey(b.k)
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return cmp.Or(a.updated.Compare(b.updated), cmp.Compare(a.k, b.k))
	})
	n := min(len(cands), over+capSlack(limit))
	keys := make([]string, n)
	for i, c := range cands[:n] {
		if _, err := o.archiveSession(c.k, c.sl.entry(), "pruned", true); err != nil {
			return err
		}
		o.del(c.k)
		keys[i] = c.k
	}
	if n > 0 {
		slices.Sort(keys)
		o.post = append(o.post, func() error { // once the index holds it
			s.log.Info("session maintenance archived sessions", zap.Int("capped", n), zap.Int("max_entries", limit),
				zap.Strings("capped_keys", firstKeys(keys)))
			return nil
		})
	}
	if n < over {
		s.warnCap(count-n, limit, over-n, "the other sessions have pending work (a turn queued, running or not delivered)")
	}
	return nil
}

// warnCap logs, at most once per capWarnEvery, that the store holds
// entries over maxEntries.
func (s *Store) warnCap(count, limit, over int, why string) {
	now := time.Now().UnixNano()
	last := s.capWarnAt.Load()
	if now-last < int64(capWarnEvery) || !s.capWarnAt.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("sessions over maintenance.maxEntries kept", zap.Int("entries", count), zap.Int("max_entries", limit),
		zap.Int("over", over), zap.String("reason", why))
}

// capSlack is how many sessions past the need a cap pass archives (5 %,
// at least 1), so a burst of creations sorts the index once per that many.
func capSlack(limit int) int { return max(limit/20, 1) }
