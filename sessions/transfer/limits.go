package transfer

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// The budget counters of package limits move through the seam's
// LimitCounters: the source must list them (sessions.LimitLister).

// CopyLimits copies every budget counter of from into to, so a member's
// spent daily or monthly budget is still spent on the target. A counter
// the target holds with the same total is skipped (a second run adds
// nothing); one it holds with another total is an error naming it unless
// overwrite, which raises the target's total to the source's (counters
// only add: a larger target total is kept). It returns the counters
// written.
func CopyLimits(ctx context.Context, from, to sessions.LimitCounters, overwrite bool) (int, error) {
	src, err := listLimits(ctx, from)
	if err != nil {
		return 0, fmt.Errorf("sessions: copy budget counters: %w", err)
	}
	have, err := to.LimitUsage(ctx, limitKeys(src))
	if err != nil {
		return 0, fmt.Errorf("sessions: copy budget counters: %w", err)
	}
	var deltas []sessions.LimitDelta
	for _, c := range src {
		d := sessions.LimitDelta{Key: c.Key, End: c.End, Tokens: c.Total.Tokens, CostUSD: c.Total.CostUSD}
		if cur, ok := have[c.Key]; ok {
			if cur == c.Total {
				continue
			}
			if !overwrite {
				return 0, fmt.Errorf("sessions: copy budget counters: the target's %s counter of %q (%s from %d) is %d tokens, $%v, not %d tokens, $%v; use --overwrite to raise it",
					c.Key.Scope, sessions.Clip(c.Key.Subject), c.Key.Period, c.Key.Start, cur.Tokens, cur.CostUSD, c.Total.Tokens, c.Total.CostUSD)
			}
			d.Tokens, d.CostUSD = max(0, c.Total.Tokens-cur.Tokens), max(0, c.Total.CostUSD-cur.CostUSD)
			if d.Tokens == 0 && d.CostUSD == 0 {
				continue
			}
		}
		deltas = append(deltas, d)
	}
	for i := 0; i < len(deltas); i += usageCopyBatch {
		if _, err := to.AddUsage(ctx, deltas[i:min(i+usageCopyBatch, len(deltas))]); err != nil {
			return i, fmt.Errorf("sessions: copy budget counters: %w", err)
		}
	}
	return len(deltas), nil
}

// CompareLimits returns how many counters a holds and the ones b lacks or
// holds with another total.
func CompareLimits(ctx context.Context, a, b sessions.LimitCounters) (int, []string, error) {
	src, err := listLimits(ctx, a)
	if err != nil {
		return 0, nil, fmt.Errorf("sessions: compare budget counters: %w", err)
	}
	have, err := b.LimitUsage(ctx, limitKeys(src))
	if err != nil {
		return 0, nil, fmt.Errorf("sessions: compare budget counters: %w", err)
	}
	var diffs []string
	for _, c := range src {
		if cur, ok := have[c.Key]; !ok || cur != c.Total {
			diffs = append(diffs, fmt.Sprintf("budget counter %s %q (%s from %d) differs in the target", c.Key.Scope, sessions.Clip(c.Key.Subject), c.Key.Period, c.Key.Start))
		}
	}
	return len(src), diffs, nil
}

func listLimits(ctx context.Context, c sessions.LimitCounters) ([]sessions.LimitCounter, error) {
	ls, ok := c.(sessions.LimitLister)
	if !ok {
		return nil, fmt.Errorf("%T cannot list its counters", c)
	}
	return ls.ListLimits(ctx)
}

func limitKeys(cs []sessions.LimitCounter) []sessions.LimitKey {
	keys := make([]sessions.LimitKey, len(cs))
	for i, c := range cs {
		keys[i] = c.Key
	}
	return keys
}
