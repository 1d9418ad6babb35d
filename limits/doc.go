// Package limits enforces per-sender, per-room and per-agent limits
// (issue 14): a message rate as a token bucket and daily and monthly
// budgets of tokens and cost, with exemptions for privileged senders and a
// rate-limited notice to whoever is throttled.
//
// A Limiter is built once per daemon and lives across config reloads
// (SetConfig swaps the compiled policy; buckets and counters stay). The
// dispatcher calls Check for each message after the access policy and
// before the message is journaled, and Charge with each turn's usage. An
// allowed message under a budget holds an estimate of its turn until
// Charge (or Release) names its hold, so concurrent turns pass a budget by
// at most one estimate (hold.go: in the store's database when it is a
// sessions.LimitReserver, else in memory; a hold expires after 15 min).
// Rate buckets and notice times are in memory only (a restart refills the
// buckets; with several replicas each replica has its own buckets). Budget
// counters are kept in memory and written behind: Charge adds to the
// memory copy, Run flushes the pending charges to the storage seam's
// sessions.LimitCounters once a second (and Flush at shutdown), which adds
// them atomically and returns the totals; the same flush re-reads the
// other counters checks use, so charges made by other replicas show here
// within a second. A crash loses at most the charges of
// the last second (the budgets undercount, never overcount). A counter not
// in memory is read from the store at its first Check (one read per
// subject and window).
//
// A Limiter is safe for concurrent use: one mutex guards its maps and is
// never held across I/O.
//
// limits imports only sessions (the seam's counter interface) and routing
// (agent id rules); it knows nothing of channels or dispatch.
package limits
