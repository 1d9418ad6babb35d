package limits

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// pruneEvery is how often ended windows are removed from the store;
// pruneGrace keeps a window that long after its end (clock skew between
// replicas, a late flush).
const (
	pruneEvery = time.Hour
	pruneGrace = 24 * time.Hour
)

// Run flushes pending charges every FlushEvery until ctx ends, then once
// more (bounded by 5 s). It returns nil. Ending ctx is the daemon's
// shutdown, after its turns settled: the holds still live are of messages
// that get no turn in this process (queued ones run at the next start,
// without a hold), so the last flush drops them from the store too rather
// than leave them counting until they expire.
func (l *Limiter) Run(ctx context.Context) error {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			l.mu.Lock()
			for id := range l.holds {
				l.dropLocked(id)
			}
			l.mu.Unlock()
			if err := l.Flush(fctx); err != nil {
				l.log.Error("budget charges not written at shutdown", zap.Error(err))
			}
			return nil
		case <-t.C:
			if err := l.Flush(ctx); err != nil && ctx.Err() == nil {
				l.log.Warn("budget charges not written; retrying", zap.Error(err))
			}
		}
	}
}

// Flush writes the pending charges in one AddUsage and takes the totals
// it returns (which include other processes' charges). On failure the
// charges stay pending. It also forgets what memory no longer needs
// (ended windows, full buckets, old notices) and prunes the store hourly.
func (l *Limiter) Flush(ctx context.Context) error {
	now := l.now()
	p := l.pol.Load()
	var batch []sessions.LimitDelta
	prune := false
	l.mu.Lock()
	l.expireLocked(now)
	release := l.release
	l.release = nil
	for k, c := range l.counters {
		if c.pending != (sessions.LimitTotal{}) {
			batch = append(batch, sessions.LimitDelta{Key: k, End: c.end, Tokens: c.pending.Tokens, CostUSD: c.pending.CostUSD})
			c.flushing.Tokens += c.pending.Tokens
			c.flushing.CostUSD += c.pending.CostUSD
			c.pending = sessions.LimitTotal{}
			continue
		}
		if c.end <= now.Unix() && c.flushing == (sessions.LimitTotal{}) && c.held == (sessions.LimitTotal{}) {
			delete(l.counters, k)
		}
	}
	for k, b := range l.buckets {
		if b.full(now) {
			delete(l.buckets, k)
		}
	}
	for k, at := range l.notices {
		if now.Sub(at) >= p.noticeEvery {
			delete(l.notices, k)
		}
	}
	if now.Sub(l.lastPrune) >= pruneEvery {
		l.lastPrune, prune = now, true
	}
	l.mu.Unlock()
	if prune {
		if n, err := l.store.PruneLimits(ctx, now.Add(-pruneGrace).Unix()); err != nil {
			l.fails.Inc()
			l.log.Warn("ended budget windows not pruned", zap.Error(err))
		} else if n > 0 {
			l.log.Debug("ended budget windows pruned", zap.Int("counters", n))
		}
	}
	if len(batch) > 0 || len(release) > 0 {
		if err := l.write(ctx, batch, release); err != nil {
			return err
		}
	}
	return l.refresh(ctx)
}

// write adds batch to the store and takes the totals it returns, dropping
// the store's holds in release in the same step; on failure the charges go
// back to pending and the holds stay to drop.
func (l *Limiter) write(ctx context.Context, batch []sessions.LimitDelta, release []string) error {
	var (
		totals map[sessions.LimitKey]sessions.LimitTotal
		err    error
	)
	if l.reserve != nil {
		totals, err = l.reserve.SettleLimits(ctx, batch, release)
	} else {
		totals, err = l.store.AddUsage(ctx, batch)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range batch {
		if c := l.counters[d.Key]; c != nil {
			subtract(&c.flushing, sessions.LimitTotal{Tokens: d.Tokens, CostUSD: d.CostUSD})
		}
	}
	if err != nil {
		l.fails.Inc()
		for _, d := range batch {
			c := l.counters[d.Key]
			if c == nil {
				c = &counter{end: d.End}
				l.counters[d.Key] = c
			}
			c.pending.Tokens += d.Tokens
			c.pending.CostUSD += d.CostUSD
		}
		l.release = append(l.release, release...)
		return err
	}
	for k, t := range totals {
		if c := l.counters[k]; c != nil {
			c.stored, c.loaded = t, true
		}
		l.fresh[k] = struct{}{}
	}
	return nil
}

// refresh re-reads the counters a check uses that this flush did not
// write, so that charges other processes (replicas) made show here too.
func (l *Limiter) refresh(ctx context.Context) error {
	var keys []sessions.LimitKey
	l.mu.Lock()
	for k, c := range l.counters {
		if _, ok := l.fresh[k]; !ok && c.loaded && c.budget {
			keys = append(keys, k)
		}
	}
	clear(l.fresh)
	l.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	got, err := l.store.LimitUsage(ctx, keys)
	if err != nil {
		l.fails.Inc()
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if c := l.counters[k]; c != nil {
			c.stored = got[k]
		}
	}
	return nil
}
