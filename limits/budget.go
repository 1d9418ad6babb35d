package limits

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// loadTimeout bounds the read of counters at a message's check; retryLoad
// is how long a failed read is not repeated.
const (
	loadTimeout = 2 * time.Second
	retryLoad   = 10 * time.Second
)

// load reads the counters of keys that are not in memory yet.
func (l *Limiter) load(ctx context.Context, keys []windowKey, now time.Time) {
	var missing []sessions.LimitKey
	l.mu.Lock()
	for _, k := range keys {
		c := l.counters[k.key]
		if c == nil {
			c = &counter{end: k.end}
			l.counters[k.key] = c
		}
		// First checked: read it even when a charge's flush loaded it
		// (flushes refresh only the counters checks use).
		if (!c.loaded || !c.budget) && !now.Before(c.retryAt) {
			missing = append(missing, k.key)
		}
		c.budget = true
	}
	l.mu.Unlock()
	if len(missing) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, loadTimeout)
	got, err := l.store.LimitUsage(lctx, missing)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range missing {
		c := l.counters[k]
		if c == nil {
			continue
		}
		if err != nil {
			c.retryAt = now.Add(retryLoad)
			continue
		}
		c.stored, c.loaded = got[k], true
	}
	if err != nil && ctx.Err() == nil {
		l.fails.Inc()
		l.log.Warn("budget counters not readable; allowing on what is in memory", zap.Error(err))
	}
}

// Charge adds a turn's usage to the day and month counters of its senders
// (split evenly), its room and its agent, and drops the turn's holds
// (u.Holds) in the same step, so a check never sees the turn counted
// twice or not at all. It only touches memory; Run writes it (and drops
// the holds taken in the store). Nothing is charged while no budget is
// configured anywhere.
func (l *Limiter) Charge(u Usage) {
	p := l.pol.Load()
	if !p.budgets || u.Tokens <= 0 && u.CostUSD <= 0 || u.AgentID == "" {
		l.Release(u.Holds...)
		return
	}
	now := l.now()
	ds, de := p.dayWindow(now)
	ms, me := p.monthWindow(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range u.Holds {
		l.dropLocked(id)
	}
	m := l.largest[u.AgentID]
	l.largest[u.AgentID] = sessions.LimitTotal{Tokens: max(m.Tokens, u.Tokens), CostUSD: max(m.CostUSD, u.CostUSD)}
	add := func(scope, subject string, tokens int64, cost float64) {
		for _, w := range [2]struct {
			period     string
			start, end int64
		}{{"day", ds.Unix(), de.Unix()}, {"month", ms.Unix(), me.Unix()}} {
			k := sessions.LimitKey{Scope: scope, Subject: subject, Period: w.period, Start: w.start}
			c := l.counters[k]
			if c == nil {
				c = &counter{end: w.end}
				l.counters[k] = c
			}
			c.pending.Tokens += tokens
			c.pending.CostUSD += cost
		}
	}
	add(ScopeAgent, u.AgentID, u.Tokens, u.CostUSD)
	if u.ChatID != "" {
		add(ScopeRoom, u.AgentID+"/"+u.Channel+":"+u.ChatID, u.Tokens, u.CostUSD)
	}
	if n := int64(len(u.Senders)); n > 0 {
		tokens, cost := u.Tokens/n, u.CostUSD/float64(n)
		for i, s := range u.Senders {
			t := tokens
			if i == 0 {
				t += u.Tokens % n // the remainder goes to the first
			}
			add(ScopeSender, u.AgentID+"/"+u.Channel+":"+s, t, cost)
		}
	}
}
