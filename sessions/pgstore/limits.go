package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// limitStore implements sessions.LimitCounters on the limit_counters table
// (migration 00007): a batch of charges is one statement that inserts or
// adds to each row and returns the totals, so replicas sharing the
// database never lose one another's charges.
type limitStore struct{ db *DB }

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// addLimitUsage adds merged deltas (checked, one per key) and puts the
// totals after the add in out.
func addLimitUsage(ctx context.Context, q querier, merged []sessions.LimitDelta, now time.Time, out map[sessions.LimitKey]sessions.LimitTotal) error {
	if len(merged) == 0 {
		return nil
	}
	// Rows are locked in one order by every replica (key order, kept by
	// WITH ORDINALITY): two batches over the same counters in different
	// orders deadlocked (40P01) in the shared-budget test.
	slices.SortFunc(merged, func(a, b sessions.LimitDelta) int { return compareLimitKeys(a.Key, b.Key) })
	n := len(merged)
	scopes, subjects, periods := make([]string, n), make([]string, n), make([]string, n)
	starts, ends, tokens, costs := make([]int64, n), make([]int64, n), make([]int64, n), make([]float64, n)
	for i, d := range merged {
		scopes[i], subjects[i], periods[i] = d.Key.Scope, d.Key.Subject, d.Key.Period
		starts[i], ends[i], tokens[i], costs[i] = d.Key.Start, d.End, d.Tokens, d.CostUSD
	}
	rows, err := q.Query(ctx, `INSERT INTO limit_counters AS c
			(scope, subject, period, window_start, window_end, tokens, cost_usd, updated_at)
		SELECT s, j, p, st, en, tk, co, $8
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::float8[])
			WITH ORDINALITY AS u(s, j, p, st, en, tk, co, ord)
		ORDER BY ord
		ON CONFLICT (scope, subject, period, window_start) DO UPDATE
			SET tokens = c.tokens + excluded.tokens, cost_usd = c.cost_usd + excluded.cost_usd,
				updated_at = excluded.updated_at
		RETURNING scope, subject, period, window_start, tokens, cost_usd`,
		scopes, subjects, periods, starts, ends, tokens, costs, now)
	if err != nil {
		return fmt.Errorf("pgstore: add limit usage: %w", err)
	}
	if err := scanLimits(rows, out); err != nil {
		return fmt.Errorf("pgstore: add limit usage: %w", err)
	}
	return nil
}

// compareLimitKeys orders counters by scope, subject, period and window.
func compareLimitKeys(a, b sessions.LimitKey) int {
	return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Subject, b.Subject),
		cmp.Compare(a.Period, b.Period), cmp.Compare(a.Start, b.Start))
}

// Limits returns the budget counters stored in the database.
func (db *DB) Limits() sessions.LimitCounters { return limitStore{db} }

// AddUsage implements sessions.LimitCounters.
func (l limitStore) AddUsage(ctx context.Context, deltas []sessions.LimitDelta) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	ctx = withOp(ctx, OpUsage)
	merged, err := sessions.MergeLimitDeltas(deltas)
	if err != nil {
		return nil, err
	}
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(merged))
	if len(merged) == 0 {
		return out, nil
	}
	if err := addLimitUsage(ctx, l.db.pool, merged, l.db.clock(), out); err != nil {
		return nil, err
	}
	return out, nil
}

// LimitUsage implements sessions.LimitCounters.
func (l limitStore) LimitUsage(ctx context.Context, keys []sessions.LimitKey) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	ctx = withOp(ctx, OpUsage)
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	n := len(keys)
	scopes, subjects, periods, starts := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, k := range keys {
		if err := sessions.CheckLimitKey(k); err != nil {
			return nil, err
		}
		scopes[i], subjects[i], periods[i], starts[i] = k.Scope, k.Subject, k.Period, k.Start
	}
	rows, err := l.db.pool.Query(ctx, `SELECT c.scope, c.subject, c.period, c.window_start, c.tokens, c.cost_usd
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS u(s, j, p, st)
		JOIN limit_counters c ON c.scope = u.s AND c.subject = u.j AND c.period = u.p AND c.window_start = u.st`,
		scopes, subjects, periods, starts)
	if err != nil {
		return nil, fmt.Errorf("pgstore: limit usage: %w", err)
	}
	if err := scanLimits(rows, out); err != nil {
		return nil, fmt.Errorf("pgstore: limit usage: %w", err)
	}
	return out, nil
}

// PruneLimits implements sessions.LimitCounters.
func (l limitStore) PruneLimits(ctx context.Context, end int64) (int, error) {
	ctx = withOp(ctx, OpUsage)
	tag, err := l.db.pool.Exec(ctx, `DELETE FROM limit_counters WHERE window_end <= $1`, end)
	if err != nil {
		return 0, fmt.Errorf("pgstore: prune limit counters: %w", err)
	}
	if _, err := l.pruneHolds(ctx); err != nil {
		return int(tag.RowsAffected()), err
	}
	return int(tag.RowsAffected()), nil
}

func scanLimits(rows pgx.Rows, out map[sessions.LimitKey]sessions.LimitTotal) error {
	var (
		k sessions.LimitKey
		t sessions.LimitTotal
	)
	_, err := pgx.ForEachRow(rows, []any{&k.Scope, &k.Subject, &k.Period, &k.Start, &t.Tokens, &t.CostUSD}, func() error {
		out[k] = t
		return nil
	})
	return err
}

var _ sessions.LimitCounters = limitStore{}

// ListLimits implements sessions.LimitLister.
func (l limitStore) ListLimits(ctx context.Context) ([]sessions.LimitCounter, error) {
	ctx = withOp(ctx, OpUsage)
	rows, err := l.db.pool.Query(ctx, `SELECT scope, subject, period, window_start, window_end, tokens, cost_usd FROM limit_counters`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list limits: %w", err)
	}
	var (
		c   sessions.LimitCounter
		out []sessions.LimitCounter
	)
	_, err = pgx.ForEachRow(rows, []any{&c.Key.Scope, &c.Key.Subject, &c.Key.Period, &c.Key.Start, &c.End, &c.Total.Tokens, &c.Total.CostUSD}, func() error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list limits: %w", err)
	}
	return out, nil
}

var _ sessions.LimitLister = limitStore{}
