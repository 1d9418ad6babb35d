package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Holds (issue 22): a budget is checked before a turn and its cost known
// only after it, so turns checked at once all passed (one sender in ten
// rooms spent 3.7 times a daily budget). A message allowed under a budget
// now holds the turn's estimate (policy.estimate, raised to the largest
// turn charged for its agent) on every budget counter it counts toward,
// and a check refuses once the counted total plus the holds reaches the
// budget. Charge replaces the hold with the real cost; Release drops it.
// Concurrent turns therefore pass a budget by at most one estimate (the
// last one admitted below it), as long as no turn costs more than its
// estimate.
//
// Where the holds live: with a store that is a sessions.LimitReserver
// (PostgreSQL) each hold is taken in the database, atomically with the
// check against every replica's counts and holds, and dropped in the
// transaction that writes the real cost (the next flush); otherwise
// (files: one daemon owns the counters) in this Limiter's memory, under
// its mutex with the check. A hold expires after holdTTL, so one left by
// a killed process, or by work that ended without Charge or Release,
// stops counting then.

// holdTTL is how long a hold counts when nothing settles it.
const holdTTL = 15 * time.Minute

// hold is one turn's reservation.
type hold struct {
	items   []holdItem
	expires time.Time
	remote  bool // taken in the store (LimitReserver); dropped at a flush
}

type holdItem struct {
	key    sessions.LimitKey
	amount sessions.LimitTotal
}

func newHoldID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// estimateLocked is a turn's hold for agentID.
func (l *Limiter) estimateLocked(p *policy, agentID string) sessions.LimitTotal {
	e := p.estimate
	if m, ok := l.largest[agentID]; ok {
		e.Tokens, e.CostUSD = max(e.Tokens, m.Tokens), max(e.CostUSD, m.CostUSD)
	}
	return e
}

// holdLocked records a hold of est on keys in memory and returns its id.
func (l *Limiter) holdLocked(keys []windowKey, est sessions.LimitTotal, now time.Time, remote bool) (string, *hold) {
	h := &hold{expires: now.Add(holdTTL), remote: remote, items: make([]holdItem, 0, len(keys))}
	for _, k := range keys {
		c := l.counters[k.key]
		if c == nil {
			c = &counter{end: k.end}
			l.counters[k.key] = c
		}
		c.held.Tokens += est.Tokens
		c.held.CostUSD += est.CostUSD
		h.items = append(h.items, holdItem{key: k.key, amount: est})
	}
	id := newHoldID()
	l.holds[id] = h
	return id, h
}

// dropLocked removes hold id from memory; a store's hold is dropped at
// the next flush. It reports whether the hold was there.
func (l *Limiter) dropLocked(id string) bool {
	h, ok := l.holds[id]
	if !ok {
		return false
	}
	delete(l.holds, id)
	for _, it := range h.items {
		if c := l.counters[it.key]; c != nil {
			subtract(&c.held, it.amount)
		}
	}
	if h.remote {
		l.release = append(l.release, id)
	}
	return true
}

// Release drops the holds of work that ended without a turn's cost (a
// refused, duplicate, dropped or failed message). Unknown ids are ignored.
func (l *Limiter) Release(ids ...string) {
	if len(ids) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.dropLocked(id)
	}
}

// expireLocked drops the holds whose time ran out.
func (l *Limiter) expireLocked(now time.Time) {
	for id, h := range l.holds {
		if !now.Before(h.expires) {
			l.dropLocked(id)
		}
	}
}

// reserveRemote takes a hold of est on keys in the store, against every
// replica's counts and holds; it reports whether the store granted it and,
// when refused, the key whose budget was reached. A store that fails is
// logged and the hold kept in memory only (the message is allowed, as
// when counters cannot be read).
func (l *Limiter) reserveRemote(ctx context.Context, r sessions.LimitReserver, keys []windowKey, est sessions.LimitTotal, now time.Time) (id string, ok bool, over windowKey) {
	l.mu.Lock()
	id, h := l.holdLocked(keys, est, now, true)
	req := sessions.LimitHold{ID: id, Expires: h.expires.Unix(), Items: make([]sessions.LimitHoldItem, len(keys))}
	for i, k := range keys {
		var local sessions.LimitTotal
		if c := l.counters[k.key]; c != nil {
			local = sessions.LimitTotal{Tokens: c.pending.Tokens + c.flushing.Tokens, CostUSD: c.pending.CostUSD + c.flushing.CostUSD}
		}
		req.Items[i] = sessions.LimitHoldItem{Key: k.key, End: k.end, Cap: sessions.LimitTotal{Tokens: k.budget.Tokens, CostUSD: k.budget.CostUSD},
			Local: local, Amount: est}
	}
	l.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, loadTimeout)
	res, err := r.ReserveLimits(rctx, req)
	cancel()
	if err != nil {
		l.mu.Lock()
		h.remote = false // not in the store: nothing to drop there
		l.mu.Unlock()
		if ctx.Err() == nil {
			l.fails.Inc()
			l.log.Warn("budget hold not taken in the store; holding in memory only", zap.Error(err))
		}
		return id, true, windowKey{}
	}
	if res.Granted {
		return id, true, windowKey{}
	}
	l.mu.Lock()
	h.remote = false
	l.dropLocked(id)
	l.mu.Unlock()
	for _, k := range keys {
		if k.key == res.Over {
			return "", false, k
		}
	}
	return "", false, keys[0]
}

// subtract takes b from *a; a cost left within rounding of zero is zero,
// so a counter whose holds and flushes are all done reads as empty.
func subtract(a *sessions.LimitTotal, b sessions.LimitTotal) {
	a.Tokens -= b.Tokens
	a.CostUSD -= b.CostUSD
	if math.Abs(a.CostUSD) < 1e-9 {
		a.CostUSD = 0
	}
}
