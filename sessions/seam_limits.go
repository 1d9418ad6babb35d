package sessions

import (
	"context"
	"fmt"
	"math"
	"unicode/utf8"
)

// LimitCounters holds the budget counters of package limits (issue 14):
// tokens and cost charged to a subject (a sender, a room, an agent) in one
// budget window (a day or a month starting at the configured reset time).
// Add is atomic per counter and adds, never overwrites, so several
// processes (replicas on one database) charging the same subject lose
// nothing; it returns the totals after the add, which include what other
// processes charged. Windows that ended are pruned. Implementations are
// safe for concurrent use by goroutines and processes (filestore.Limits,
// pgstore.DB.Limits).
type LimitCounters interface {
	// AddUsage adds each delta to its counter (creating it at zero) and
	// returns every touched counter's total after the add. Deltas of one
	// key are merged first.
	AddUsage(ctx context.Context, deltas []LimitDelta) (map[LimitKey]LimitTotal, error)
	// LimitUsage returns the totals of keys; a key never charged is absent.
	LimitUsage(ctx context.Context, keys []LimitKey) (map[LimitKey]LimitTotal, error)
	// PruneLimits removes the counters whose window ended at or before
	// end (unix seconds) and reports how many it removed.
	PruneLimits(ctx context.Context, end int64) (int, error)
}

// LimitKey names one counter. Scope is "sender", "room" or "agent";
// Subject is opaque (it never becomes a path or SQL text); Period is "day"
// or "month"; Start is the window's start in unix seconds.
type LimitKey struct {
	Scope   string `json:"scope"`
	Subject string `json:"subject"`
	Period  string `json:"period"`
	Start   int64  `json:"start"`
}

// LimitDelta is what one charge adds to a counter; End is the window's
// end (unix seconds), kept for pruning.
type LimitDelta struct {
	Key     LimitKey
	End     int64
	Tokens  int64
	CostUSD float64
}

// LimitTotal is a counter's value.
type LimitTotal struct {
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"costUsd"`
}

// Bounds of limit keys: a subject is a channel, an account-free chat or
// sender id and an agent id joined, well under these.
const (
	maxLimitScope   = 32
	MaxLimitSubject = 512
)

// CheckLimitKey refuses a key no backend stores: empty or over-long scope
// or subject, NUL or invalid UTF-8, a period other than day or month, a
// negative start.
func CheckLimitKey(k LimitKey) error {
	switch {
	case k.Scope == "" || len(k.Scope) > maxLimitScope || !limitText(k.Scope):
		return fmt.Errorf("sessions: limit counter: scope %q is empty, longer than %d bytes, or holds NUL or invalid UTF-8", k.Scope, maxLimitScope)
	case k.Subject == "" || len(k.Subject) > MaxLimitSubject || !limitText(k.Subject):
		return fmt.Errorf("sessions: limit counter: subject of %d bytes is empty, longer than %d bytes, or holds NUL or invalid UTF-8", len(k.Subject), MaxLimitSubject)
	case k.Period != "day" && k.Period != "month":
		return fmt.Errorf("sessions: limit counter: period %q is not day or month", k.Period)
	case k.Start < 0:
		return fmt.Errorf("sessions: limit counter: window start %d is negative", k.Start)
	}
	return nil
}

// checkLimitDelta refuses a delta with a bad key, an end not after its
// start, or a negative or non-finite amount.
func checkLimitDelta(d LimitDelta) error {
	if err := CheckLimitKey(d.Key); err != nil {
		return err
	}
	switch {
	case d.End <= d.Key.Start:
		return fmt.Errorf("sessions: limit counter: window end %d is not after its start %d", d.End, d.Key.Start)
	case d.Tokens < 0:
		return fmt.Errorf("sessions: limit counter: tokens %d is negative", d.Tokens)
	case d.CostUSD < 0 || math.IsNaN(d.CostUSD) || math.IsInf(d.CostUSD, 0):
		return fmt.Errorf("sessions: limit counter: cost %v is negative or not finite", d.CostUSD)
	}
	return nil
}

// MergeLimitDeltas checks deltas and merges those of one key (the end of
// the first one wins), in first-seen order.
func MergeLimitDeltas(deltas []LimitDelta) ([]LimitDelta, error) {
	out := make([]LimitDelta, 0, len(deltas))
	at := make(map[LimitKey]int, len(deltas))
	for _, d := range deltas {
		if err := checkLimitDelta(d); err != nil {
			return nil, err
		}
		if i, ok := at[d.Key]; ok {
			out[i].Tokens += d.Tokens
			out[i].CostUSD += d.CostUSD
			continue
		}
		at[d.Key] = len(out)
		out = append(out, d)
	}
	return out, nil
}

func limitText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return utf8.ValidString(s)
}

// LimitLister is an optional capability of a LimitCounters (found by type
// assertion) that `gateway storage migrate` needs: every stored counter,
// so a member's spent budget moves with the rest of the state.
type LimitLister interface {
	// ListLimits returns every counter with its window end and total.
	ListLimits(ctx context.Context) ([]LimitCounter, error)
}

// LimitCounter is one stored counter, as LimitLister lists it.
type LimitCounter struct {
	Key   LimitKey
	End   int64
	Total LimitTotal
}
