package pgstore

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Round trips and commits, counted by operation (issue 21): what each
// backend operation costs the database, read by the daemon's metrics
// (gateway_storage_roundtrips_total, gateway_storage_commits_total) and by
// cmd/gateway-bench per message. A pgx tracer on every connection of the
// DB (the pool, the owner-lock and LISTEN connections) counts one round
// trip per Exec, Query, QueryRow and SendBatch, and one commit per
// transaction that ended committed: a COMMIT, a batch outside a
// transaction (one implicit or explicit transaction, whatever it holds),
// or a statement outside a transaction (autocommit, reads too, as the
// server's xact_commit counts them). The operation is the label the
// caller put in the context (withOp); a call without one counts as
// OpOther. pgx's own extra round trips (preparing a statement the first
// time a connection runs it, the pool's ping of a connection idle for a
// second) are not counted.

// Operations of the counters. Per message the daemon runs accept,
// begin_turn (replicas only), start, begin, context, append, ready, sent
// and done (a turn's reply stored with its answer's append costs no ready
// of its own: reply_ahead.go); the counters and the accept's WAL flush
// serve several messages at once. A Delivery's marks are labelled by
// their own names (start, fail, abort, done, ready, unready, sent, draft,
// undraft, probe).
const (
	OpAccept     = "accept"      // Delivery.Accept, AcceptDeferred
	OpAcceptWait = "accept_wait" // the WAL flush an AcceptDeferred waits for
	OpStart      = "start"       // Delivery.Start (Fail and Abort: "fail", "abort")
	OpReady      = "ready"       // Delivery.Ready: the reply stored before its first chunk
	OpSent       = "sent"        // Delivery.Sent: a chunk's mark
	OpDone       = "done"        // Delivery.Done: records finished without a reply
	OpBeginTurn  = "begin_turn"  // Delivery.BeginTurn: per-session order and the session lease
	OpLease      = "lease"       // lease renewals and releases (session and leader leases)
	OpBegin      = "begin"       // Index.Begin: the session a turn runs in
	OpIndex      = "index"       // the other reads and writes of the session index
	OpCounters   = "counters"    // Store.AddCounters, written in the background
	OpAppend     = "append"      // transcript appends (the group commit)
	OpContext    = "context"     // transcript reads (Context, History, Records, ...)
	OpRooms      = "rooms"       // room history
	OpClaim      = "claim"       // take-over: Claim, ClaimReplies, Pending, Replies, Drafts, Orphans
	OpRenew      = "renew"       // a Delivery's background loop: its leases, owner lock and pruning
	OpReplica    = "replica"     // replica registration, heartbeat and status
	OpJournal    = "journal"     // Delivery.Stats (the journal's gauges, read at each scrape)
	OpDraft      = "draft"       // Delivery.Draft and DraftLive (DraftDone: "undraft")
	OpCursors    = "cursors"     // channel cursors (the Telegram offset)
	OpUsage      = "usage"       // the usage log and limit counters
	OpPairing    = "pairing"     // pairing state
	OpDead       = "dead"        // dead letters (given-up messages and replies)
	OpMemory     = "memory"      // the agents' notes (sessions.Memory)
	OpJobs       = "jobs"        // scheduled jobs
	OpOther      = "other"       // anything without a label (migrations, doctor, tools)
)

type opKey struct{}

// withOp labels the database calls made with ctx as operation op.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// opOf is ctx's label, OpOther when it has none.
func opOf(ctx context.Context) string {
	if op, ok := ctx.Value(opKey{}).(string); ok {
		return op
	}
	return OpOther
}

// OpStats is what one operation cost the database so far.
type OpStats struct {
	Op         string
	RoundTrips int64
	Commits    int64
}

// opCount holds one operation's counters.
type opCount struct {
	trips, commits atomic.Int64
}

// tripTracer is the pgx tracer counting round trips and commits. It is
// safe for concurrent use (pgx calls it from every connection).
type tripTracer struct {
	ops sync.Map // op name → *opCount
}

var (
	_ pgx.QueryTracer = (*tripTracer)(nil)
	_ pgx.BatchTracer = (*tripTracer)(nil)
)

func (t *tripTracer) count(op string) *opCount {
	if c, ok := t.ops.Load(op); ok {
		return c.(*opCount)
	}
	c, _ := t.ops.LoadOrStore(op, &opCount{})
	return c.(*opCount)
}

// stats lists the counters by operation name.
func (t *tripTracer) stats() []OpStats {
	var out []OpStats
	t.ops.Range(func(k, v any) bool {
		c := v.(*opCount)
		out = append(out, OpStats{Op: k.(string), RoundTrips: c.trips.Load(), Commits: c.commits.Load()})
		return true
	})
	slices.SortFunc(out, func(a, b OpStats) int { return strings.Compare(a.Op, b.Op) })
	return out
}

// tripState is what a call's start tells its end.
type tripState struct {
	c       *opCount
	commits int64 // committed transactions if the call succeeds
}

type tripStateKey struct{}

// TraceQueryStart counts the round trip of Exec, Query or QueryRow.
func (t *tripTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c := t.count(opOf(ctx))
	c.trips.Add(1)
	st := &tripState{c: c}
	switch verb(data.SQL) {
	case "BEGIN", "START", "ROLLBACK", "ABORT":
	case "COMMIT", "END":
		st.commits = 1 // unless the server answers ROLLBACK (TraceQueryEnd)
	default:
		if outsideTx(conn) {
			st.commits = 1 // autocommit
		}
	}
	return context.WithValue(ctx, tripStateKey{}, st)
}

// TraceQueryEnd counts the commit of a call that committed.
func (t *tripTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	st, ok := ctx.Value(tripStateKey{}).(*tripState)
	if !ok || data.Err != nil || st.commits == 0 || data.CommandTag.String() == "ROLLBACK" {
		return
	}
	st.c.commits.Add(st.commits)
}

// TraceBatchStart counts the batch's round trip: pgx pipelines its
// statements and waits once.
func (t *tripTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	c := t.count(opOf(ctx))
	c.trips.Add(1)
	st := &tripState{c: c}
	if outsideTx(conn) {
		st.commits = 1 // the batch's implicit transaction, or BEGIN ... COMMIT
		if data.Batch != nil {
			n := 0
			for _, q := range data.Batch.QueuedQueries {
				if v := verb(q.SQL); v == "COMMIT" || v == "END" {
					n++
				}
			}
			st.commits = max(st.commits, int64(n))
		}
	}
	return context.WithValue(ctx, tripStateKey{}, st)
}

// TraceBatchQuery counts nothing: the batch is one round trip.
func (t *tripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd counts the batch's commit when it succeeded (a failed
// statement rolls the batch's transaction back).
func (t *tripTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	st, ok := ctx.Value(tripStateKey{}).(*tripState)
	if !ok || data.Err != nil || st.commits == 0 {
		return
	}
	st.c.commits.Add(st.commits)
}

// outsideTx reports whether conn is outside a transaction block.
func outsideTx(conn *pgx.Conn) bool {
	return conn == nil || conn.PgConn().TxStatus() == 'I'
}

// verb is the first word of a statement, upper case.
func verb(sql string) string {
	sql = strings.TrimLeft(sql, " \t\r\n;")
	end := strings.IndexFunc(sql, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') })
	if end < 0 {
		end = len(sql)
	}
	return strings.ToUpper(sql[:end])
}

// OpStats lists, by operation, the round trips and commits this DB's
// connections made so far (see OpStats).
func (db *DB) OpStats() []OpStats { return db.trips.stats() }
