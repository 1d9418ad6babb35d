package sessions

import (
	"context"
	"fmt"
)

// LimitReserver is an optional capability of a LimitCounters (found by
// type assertion): budget holds checked and taken atomically for every
// process that shares the store, so replicas on one database admit
// concurrent turns against one count (pgstore). Package limits keeps the
// holds in its own memory when the store lacks it, which binds as long as
// one process owns the counters (filestore: one daemon owns its state
// directory). A hold is a turn's estimated cost, taken before the turn and
// released when its real cost is added (SettleLimits); a hold left by a
// killed process counts until it expires, then never again.
type LimitReserver interface {
	// ReserveLimits takes h on every key of h only when, for each key,
	// the stored total plus the key's unexpired holds plus Local is below
	// Cap (each non-zero field of Cap); otherwise it takes nothing and
	// names the first key at or over its cap. Reservations of one key are
	// serialised across processes.
	ReserveLimits(ctx context.Context, h LimitHold) (LimitReserveResult, error)
	// SettleLimits adds deltas as AddUsage does and drops the holds whose
	// ids are in release, in one step: another process never sees a turn
	// counted twice or not at all. Unknown ids are ignored.
	SettleLimits(ctx context.Context, deltas []LimitDelta, release []string) (map[LimitKey]LimitTotal, error)
}

// LimitHold is one turn's reservation on the counters of its budgets.
type LimitHold struct {
	ID      string // unique, at most 64 bytes
	Expires int64  // unix seconds; from then on the hold counts for nothing
	Items   []LimitHoldItem
}

// LimitHoldItem is a hold's part on one counter: what it reserves
// (Amount), the budget it must stay under (Cap; a zero field caps
// nothing) and what this process charged and has not written yet (Local,
// counted with the stored total).
type LimitHoldItem struct {
	Key    LimitKey
	End    int64 // the window's end, as in LimitDelta
	Cap    LimitTotal
	Local  LimitTotal
	Amount LimitTotal
}

// LimitReserveResult is ReserveLimits' answer: Granted, or the key whose
// budget was reached (Over).
type LimitReserveResult struct {
	Granted bool
	Over    LimitKey
}

// maxLimitHoldID bounds a hold's id.
const maxLimitHoldID = 64

// CheckLimitHold refuses a hold no backend stores: an empty or long id, no
// item, or an item with a bad key, window or amount.
func CheckLimitHold(h LimitHold) error {
	if h.ID == "" || len(h.ID) > maxLimitHoldID || !limitText(h.ID) {
		return fmt.Errorf("sessions: limit hold: id of %d bytes is empty, longer than %d bytes, or holds NUL or invalid UTF-8", len(h.ID), maxLimitHoldID)
	}
	if len(h.Items) == 0 {
		return fmt.Errorf("sessions: limit hold %s: no counter", h.ID)
	}
	for _, it := range h.Items {
		for _, d := range []LimitDelta{
			{Key: it.Key, End: it.End, Tokens: it.Amount.Tokens, CostUSD: it.Amount.CostUSD},
			{Key: it.Key, End: it.End, Tokens: it.Cap.Tokens, CostUSD: it.Cap.CostUSD},
			{Key: it.Key, End: it.End, Tokens: it.Local.Tokens, CostUSD: it.Local.CostUSD},
		} {
			if err := checkLimitDelta(d); err != nil {
				return fmt.Errorf("sessions: limit hold %s: %w", h.ID, err)
			}
		}
	}
	return nil
}

// Reached reports whether used (the stored total, the holds and Local)
// is at or over its Cap.
func (it LimitHoldItem) Reached(used LimitTotal) bool {
	return it.Cap.Tokens > 0 && used.Tokens >= it.Cap.Tokens || it.Cap.CostUSD > 0 && used.CostUSD >= it.Cap.CostUSD
}
