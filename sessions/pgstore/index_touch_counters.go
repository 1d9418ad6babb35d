package pgstore

import (
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// Begin's touch of a fresh session and the counters queued for it, in one
// UPDATE (issue 21). Written as two, each wrote a new row version (and,
// while updated_at was indexed, before migration 00021, an entry in every
// index of entries): one statement is half of that. The counters
// apply whatever the session's clocks say; the touch's columns change only
// where touchFreshSQL's bounds hold, and the statement returns whether they
// held. It needs no second look at the row: the columns the bounds read
// are those a touch leaves alone when they do not hold (session_started_at
// is never set, last_interaction_at only by a touch), so the bounds hold
// on the row written exactly when they held on the row found.

// touchFreshCountersSQL is touchFreshSQL's touch ($1-$16) and
// addCountersSQL's deltas ($17-$23) in one statement: it returns the
// entry and whether the session was fresh (and touched), or no row for a
// key without an entry.
var touchFreshCountersSQL = `UPDATE entries SET
		input_tokens = input_tokens + $17, output_tokens = output_tokens + $18, total_tokens = total_tokens + $19,
		message_count = message_count + $20,
		context_tokens = CASE WHEN $21::bigint > 0 THEN $21 ELSE context_tokens END,
		model = COALESCE(NULLIF($22::text, ''), model), provider = COALESCE(NULLIF($23::text, ''), provider),` +
	onlyIf(freshBounds, touchSet) + `
	WHERE agent_id = $1 AND session_key = $2
	RETURNING ` + entryColumns + `, ` + freshBounds

// freshBounds is touchFreshSQL's condition on the session's clocks.
const freshBounds = `($3::text IS NOT NULL AND session_started_at >= $15::timestamptz AND last_interaction_at >= $16::timestamptz)`

// onlyIf makes the assignments of set (one a line) keep their column's
// value unless cond holds, except updated_at's, which the counters move
// too (to the same clock).
func onlyIf(cond, set string) string {
	lines := strings.Split(strings.TrimSpace(set), "\n")
	for i, l := range lines {
		l = strings.TrimSuffix(strings.TrimSpace(l), ",")
		col, expr, _ := strings.Cut(l, " = ")
		if col != "updated_at" {
			l = col + " = CASE WHEN " + cond + " THEN " + expr + " ELSE " + col + " END"
		}
		lines[i] = "\t" + l
	}
	return "\n" + strings.Join(lines, ",\n")
}

// queueTouchCounters queues touchFreshCountersSQL with touchFreshSQL's
// args and the deltas c (merged, of the same session): *e gets the entry,
// *none is set when the key has no entry or the session was not fresh
// (its counters are added all the same).
func queueTouchCounters(b *pgx.Batch, args []any, c counterReq, e *sessions.Entry, none *bool) {
	args = append(args, c.c.InputTokens, c.c.OutputTokens, c.c.TotalTokens, c.c.Messages, c.c.ContextTokens,
		c.c.Model, c.c.Provider)
	b.Queue(touchFreshCountersSQL, args...).QueryRow(func(row pgx.Row) error {
		fresh := false
		var err error
		*e, err = scanEntry(extraScan{row, &fresh})
		if err == nil && !fresh {
			*none = true
		}
		return noRows(err, none)
	})
}

// extraScan is a row whose columns after an entry's go to extra.
type extraScan struct {
	pgx.Row
	extra any
}

func (r extraScan) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra)...) }
