package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Budget holds (sessions.LimitReserver) on the limit_holds table
// (migration 00011). A reservation is one transaction: it locks the
// counters' rows in key order (creating them at zero), sums their
// unexpired holds, and inserts its own only when every counter stays
// under its cap; a settle adds the real cost and deletes the holds in one
// transaction. Replicas reserving on one counter queue on its row lock,
// so each sees the holds of those before it.

var _ sessions.LimitReserver = limitStore{}

// errHoldRefused rolls back a reservation that a cap refused.
var errHoldRefused = errors.New("pgstore: limit hold refused")

// ReserveLimits implements sessions.LimitReserver.
func (l limitStore) ReserveLimits(ctx context.Context, h sessions.LimitHold) (sessions.LimitReserveResult, error) {
	ctx = withOp(ctx, OpUsage)
	var res sessions.LimitReserveResult
	if err := sessions.CheckLimitHold(h); err != nil {
		return res, err
	}
	items := slices.Clone(h.Items)
	slices.SortFunc(items, func(a, b sessions.LimitHoldItem) int { return compareLimitKeys(a.Key, b.Key) })
	items = slices.CompactFunc(items, func(a, b sessions.LimitHoldItem) bool { return a.Key == b.Key })
	n := len(items)
	scopes, subjects, periods := make([]string, n), make([]string, n), make([]string, n)
	starts, ends, tokens, costs := make([]int64, n), make([]int64, n), make([]int64, n), make([]float64, n)
	for i, it := range items {
		scopes[i], subjects[i], periods[i] = it.Key.Scope, it.Key.Subject, it.Key.Period
		starts[i], ends[i], tokens[i], costs[i] = it.Key.Start, it.End, it.Amount.Tokens, it.Amount.CostUSD
	}
	now := l.db.clock()
	err := pgx.BeginFunc(ctx, l.db.pool, func(tx pgx.Tx) error {
		// Lock every counter in key order (a no-op update of an existing
		// row, a zero row for a new one).
		used := make(map[sessions.LimitKey]sessions.LimitTotal, n)
		rows, err := tx.Query(ctx, `INSERT INTO limit_counters AS c
				(scope, subject, period, window_start, window_end, updated_at)
			SELECT s, j, p, st, en, $6
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
				WITH ORDINALITY AS u(s, j, p, st, en, ord)
			ORDER BY ord
			ON CONFLICT (scope, subject, period, window_start) DO UPDATE SET tokens = c.tokens
			RETURNING scope, subject, period, window_start, tokens, cost_usd`,
			scopes, subjects, periods, starts, ends, now)
		if err != nil {
			return err
		}
		if err := scanLimits(rows, used); err != nil {
			return err
		}
		held := make(map[sessions.LimitKey]sessions.LimitTotal, n)
		rows, err = tx.Query(ctx, `SELECT h.scope, h.subject, h.period, h.window_start, sum(h.tokens)::bigint, sum(h.cost_usd)
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS u(s, j, p, st)
			JOIN limit_holds h ON h.scope = u.s AND h.subject = u.j AND h.period = u.p AND h.window_start = u.st
			WHERE h.expires_at > $5
			GROUP BY h.scope, h.subject, h.period, h.window_start`,
			scopes, subjects, periods, starts, now.Unix())
		if err != nil {
			return err
		}
		if err := scanLimits(rows, held); err != nil {
			return err
		}
		for _, it := range items {
			u, hd := used[it.Key], held[it.Key]
			total := sessions.LimitTotal{Tokens: u.Tokens + hd.Tokens + it.Local.Tokens, CostUSD: u.CostUSD + hd.CostUSD + it.Local.CostUSD}
			if it.Reached(total) {
				res.Over = it.Key
				return errHoldRefused
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO limit_holds (id, scope, subject, period, window_start, tokens, cost_usd, expires_at)
			SELECT $1, s, j, p, st, tk, co, $8
			FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::float8[]) AS u(s, j, p, st, tk, co)`,
			h.ID, scopes, subjects, periods, starts, tokens, costs, h.Expires)
		return err
	})
	switch {
	case errors.Is(err, errHoldRefused):
		return res, nil
	case err != nil:
		return res, fmt.Errorf("pgstore: reserve limits: %w", err)
	}
	res.Granted = true
	return res, nil
}

// SettleLimits implements sessions.LimitReserver.
func (l limitStore) SettleLimits(ctx context.Context, deltas []sessions.LimitDelta, release []string) (map[sessions.LimitKey]sessions.LimitTotal, error) {
	ctx = withOp(ctx, OpUsage)
	merged, err := sessions.MergeLimitDeltas(deltas)
	if err != nil {
		return nil, err
	}
	out := make(map[sessions.LimitKey]sessions.LimitTotal, len(merged))
	if len(merged) == 0 && len(release) == 0 {
		return out, nil
	}
	err = pgx.BeginFunc(ctx, l.db.pool, func(tx pgx.Tx) error {
		if err := addLimitUsage(ctx, tx, merged, l.db.clock(), out); err != nil {
			return err
		}
		if len(release) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `DELETE FROM limit_holds WHERE id = ANY($1::text[])`, release)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: settle limits: %w", err)
	}
	return out, nil
}

// pruneHolds deletes the holds that expired.
func (l limitStore) pruneHolds(ctx context.Context) (int, error) {
	tag, err := l.db.pool.Exec(ctx, `DELETE FROM limit_holds WHERE expires_at <= $1`, l.db.clock().Unix())
	if err != nil {
		return 0, fmt.Errorf("pgstore: prune limit holds: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
