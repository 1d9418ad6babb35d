package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// limitStore implements sessions.LimitCounters on the limit_counters
// table: an add is one writer job of upserts that add, never overwrite.
// It does not implement sessions.LimitReserver: one daemon owns the
// database (the state dir's lock), so package limits keeps the holds in its memory,
// as with the files backend.
type limitStore struct{ db *DB }

var _ sessions.LimitCounters = limitStore{}

// Limits returns the budget counters stored in the database.
func (db *DB) Limits() sessions.LimitCounters { return limitStore{db} }

// AddUsage implements sessions.LimitCounters.
func (l limitStore) AddUsage(ctx context.Context, deltas []sessions.LimitDelta) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	merged, err := sessions.MergeLimitDeltas(deltas)
	if err != nil {
		return nil, err
	}
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(merged))
	if len(merged) == 0 {
		return out, nil
	}
	err = l.db.w.do(ctx, func(tx *wtx) error {
		clear(out)
		for _, d := range merged {
			var t sessions.LimitTotal
			err := tx.QueryRow(`INSERT INTO limit_counters AS c (scope, subject, period, window_start, window_end, tokens, cost_usd)
				VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (scope, subject, period, window_start) DO UPDATE
				SET tokens = c.tokens + excluded.tokens, cost_usd = c.cost_usd + excluded.cost_usd
				RETURNING tokens, cost_usd`,
				d.Key.Scope, d.Key.Subject, d.Key.Period, d.Key.Start, d.End, d.Tokens, d.CostUSD).Scan(&t.Tokens, &t.CostUSD)
			if err != nil {
				return err
			}
			out[d.Key] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: add limit usage: %w", err)
	}
	return out, nil
}

// LimitUsage implements sessions.LimitCounters.
func (l limitStore) LimitUsage(ctx context.Context, keys []sessions.LimitKey) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(keys))
	for _, k := range keys {
		if err := sessions.CheckLimitKey(k); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		var t sessions.LimitTotal
		err := l.db.read.QueryRowContext(ctx, `SELECT tokens, cost_usd FROM limit_counters
			WHERE scope = ? AND subject = ? AND period = ? AND window_start = ?`,
			k.Scope, k.Subject, k.Period, k.Start).Scan(&t.Tokens, &t.CostUSD)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: limit usage: %w", storageErr(err))
		}
		out[k] = t
	}
	return out, nil
}

// PruneLimits implements sessions.LimitCounters.
func (l limitStore) PruneLimits(ctx context.Context, end int64) (int, error) {
	var n int64
	err := l.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`DELETE FROM limit_counters WHERE window_end <= ?`, end)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: prune limits: %w", err)
	}
	return int(n), nil
}

// ListLimits implements sessions.LimitLister.
func (l limitStore) ListLimits(ctx context.Context) ([]sessions.LimitCounter, error) {
	rows, err := l.db.read.QueryContext(ctx, `SELECT scope, subject, period, window_start, window_end, tokens, cost_usd FROM limit_counters`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list limits: %w", storageErr(err))
	}
	defer rows.Close()
	var out []sessions.LimitCounter
	for rows.Next() {
		var c sessions.LimitCounter
		if err := rows.Scan(&c.Key.Scope, &c.Key.Subject, &c.Key.Period, &c.Key.Start, &c.End, &c.Total.Tokens, &c.Total.CostUSD); err != nil {
			return nil, fmt.Errorf("sqlitestore: list limits: %w", storageErr(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list limits: %w", storageErr(err))
	}
	return out, nil
}

var _ sessions.LimitLister = limitStore{}
