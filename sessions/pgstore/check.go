package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The doctor's knowledge of this backend (issue 12): Check finds what is
// inconsistent in the database, Repair fixes what can be fixed without
// losing anything. They report in the files backend's shape
// (sessions.Problem) and with its codes where the meaning is the same, so
// gateway doctor prints both backends alike.

// Problem codes of this backend alone (the others are sessions.Code*).
// Never rename one; add new ones.
const (
	// CodeSchemaOlder: the database lacks migrations this binary has.
	CodeSchemaOlder = "schema-older"
	// CodeSchemaNewer: a newer gateway migrated the database past the
	// newest migration this binary knows.
	CodeSchemaNewer = "schema-newer"
	// CodeDeliveryUnknownAgent: pending ingress or replies of an agent
	// that has no session, current or archived.
	CodeDeliveryUnknownAgent = "delivery-unknown-agent"
)

// defaultBacklogAfter is sessions.CheckOptions.BacklogAfter's default, as
// the files backend applies it.
const defaultBacklogAfter = 24 * time.Hour

// unknownAgentAfter is how long a pending row of an agent without
// sessions may wait before it is reported: a new agent's first message
// is accepted before its turn creates the agent's first session.
const unknownAgentAfter = 10 * time.Minute

// RepairReason is the archive reason of a transcript Repair recovered:
// rows no entry and no archived session named.
const RepairReason = "recovered"

// Check inspects the database without changing anything, in one
// read-only snapshot, so it may run beside the daemons: the schema version
// against this binary's migrations; each entry against its transcript rows
// (missing-transcript: counters but no rows, or rows without the session
// header; counter-lag: messageCount or compactionCount that disagree with
// the rows); each transcript's head row (transcript_heads: missing,
// without rows, or behind the rows: counter-lag); transcripts that no
// entry and no archived session names (orphan-transcript); and the
// delivery tables (journal-backlog, delivery-unknown-agent). Every check
// is one set-based statement, so its cost grows with the table sizes, not
// with round trips. Leases are not checked: an expired lease's row stays
// on purpose (its token is what fences a holder that paused; deleting it
// would let a new holder start over at token 1), and gateway doctor lists
// the live ones.
//
// Problems come in this order: schema, entries (by agent and key), heads
// and orphans (by session id), then delivery.
func (db *DB) Check(ctx context.Context, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	if opts.Now.IsZero() {
		opts.Now = db.clock()
	}
	if opts.BacklogAfter <= 0 {
		opts.BacklogAfter = defaultBacklogAfter
	}
	out, err := db.checkSchema(ctx)
	if err != nil {
		return nil, err
	}
	// The key moves recorded when chats moved (as the files check reads
	// them): an orphan's header keeps the key its session started under.
	moves, _, err := sessions.ReadKeyMoves(ctx, db.Cursors())
	if err != nil {
		return nil, fmt.Errorf("pgstore: check %s: %w", db.target, err)
	}
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			// A full check reads every transcript row once: at a million
			// sessions that may outlast the statement timeout meant for
			// a turn's statements. ctx bounds it instead.
			if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
				return err
			}
			ps, err := checkTranscripts(ctx, tx, moves, opts)
			if err != nil {
				return fmt.Errorf("transcripts: %w", err)
			}
			out = append(out, ps...)
			ps, err = checkDelivery(ctx, tx, opts)
			if err != nil {
				return fmt.Errorf("delivery: %w", err)
			}
			out = append(out, ps...)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("pgstore: check %s: %w", db.target, err)
	}
	return out, nil
}

// checkSchema compares the database's schema version with the newest
// migration embedded in this binary.
func (db *DB) checkSchema(ctx context.Context) ([]sessions.Problem, error) {
	p, done, err := db.provider()
	if err != nil {
		return nil, fmt.Errorf("pgstore: check schema: %w", err)
	}
	defer done()
	cur, newest, err := p.GetVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: check schema: %w", err)
	}
	switch {
	case cur < newest:
		return []sessions.Problem{{Code: CodeSchemaOlder, Path: versionTable,
			Message: fmt.Sprintf("the schema is at version %d; this binary's migrations go to %d: "+
				"the daemon applies the missing ones when it opens the database", cur, newest)}}, nil
	case cur > newest:
		return []sessions.Problem{{Code: CodeSchemaNewer, Path: versionTable,
			Message: fmt.Sprintf("the schema is at version %d, newer than this binary knows (its migrations go to %d): "+
				"a newer gateway migrated the database; this binary is older than the schema, upgrade it", cur, newest)}}, nil
	}
	return nil, nil
}

// checkTranscriptsSQL aggregates every transcript once (t) and compares
// the aggregate with the entries, the heads and the archive. Each row is
// one finding: kind, agent, key, session id, two stored numbers (entry:
// messageCount, compactionCount; head: last_seq, messages), the rows'
// count, messages, compactions (entry) or highest seq (head), whether the
// rows hold a session header (head: whether the head row exists), an
// orphan's header body, and (entry) when its newest row was written.
const checkTranscriptsSQL = `WITH t AS MATERIALIZED (
	SELECT session_id, count(*) AS n,
		count(*) FILTER (WHERE type = 'message') AS messages,
		count(*) FILTER (WHERE type = 'compaction') AS compactions,
		max(seq) AS max_seq,
		bool_or(type = 'session') AS header,
		max(created_at) AS newest
	FROM transcript_entries GROUP BY session_id)
SELECT 1 AS kind, e.agent_id, e.session_key, e.session_id,
	e.message_count::bigint, e.compaction_count::bigint,
	COALESCE(t.n, 0), COALESCE(t.messages, 0), COALESCE(t.compactions, 0), COALESCE(t.header, false), NULL::text,
	t.newest
FROM entries e LEFT JOIN t ON t.session_id = e.session_id
WHERE CASE WHEN t.session_id IS NULL THEN e.message_count <> 0 OR e.compaction_count <> 0
	ELSE NOT t.header OR e.message_count <> t.messages OR e.compaction_count <> t.compactions END
UNION ALL
SELECT 2, '', '', COALESCE(t.session_id, h.session_id),
	COALESCE(h.last_seq, 0), COALESCE(h.messages, 0),
	COALESCE(t.n, 0), COALESCE(t.messages, 0), COALESCE(t.max_seq, 0), h.session_id IS NOT NULL, NULL, NULL::timestamptz
FROM t FULL JOIN transcript_heads h ON h.session_id = t.session_id
WHERE h.session_id IS NULL OR t.session_id IS NULL OR h.messages <> t.messages OR h.last_seq < t.max_seq
UNION ALL
SELECT 3, '', '', t.session_id, 0, 0, t.n, t.messages, 0, t.header,
	(SELECT x.body::text FROM transcript_entries x
		WHERE x.session_id = t.session_id AND x.type = 'session' ORDER BY x.seq LIMIT 1),
	NULL
FROM t
WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.session_id = t.session_id)
	AND NOT EXISTS (SELECT 1 FROM archived a WHERE a.session_id = t.session_id)
ORDER BY 1, 2, 3, 4`

// The kinds of checkTranscriptsSQL's rows, in its order.
const (
	findingEntry = iota + 1
	findingHead
	findingOrphan
)

// transcriptFinding is one row of checkTranscriptsSQL.
type transcriptFinding struct {
	kind                  int
	agent, key, sessionID string // agent and key of an entry's finding only
	// stored1 and stored2 are what is stored: an entry's messageCount and
	// compactionCount, a head's last_seq and messages.
	stored1, stored2 int64
	// rows and messages count the transcript's rows and message rows;
	// third is its compactions (entry) or its highest seq (head).
	rows, messages, third int64
	// flag: the rows hold a session header (entry, orphan); the head row
	// exists (head).
	flag   bool
	header *string    // an orphan's session header (body), if it has one
	newest *time.Time // an entry's newest transcript row (nil: no rows)
}

func checkTranscripts(ctx context.Context, tx pgx.Tx, moves sessions.KeyMoves, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	rows, err := tx.Query(ctx, checkTranscriptsSQL)
	if err != nil {
		return nil, err
	}
	fs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (transcriptFinding, error) {
		var f transcriptFinding
		err := r.Scan(&f.kind, &f.agent, &f.key, &f.sessionID, &f.stored1, &f.stored2,
			&f.rows, &f.messages, &f.third, &f.flag, &f.header, &f.newest)
		return f, err
	})
	if err != nil {
		return nil, err
	}
	var out []sessions.Problem
	for _, f := range fs {
		switch f.kind {
		case findingEntry:
			out = append(out, f.entryProblems(opts)...)
		case findingHead:
			out = append(out, f.headProblem())
		default:
			out = append(out, f.orphanProblem(moves))
		}
	}
	return out, nil
}

// entryProblems: an entry with counters but no transcript rows, with rows
// but no session header, or whose counters disagree with its rows (unless
// its newest row is within opts.Settle: a turn whose counters are on
// their way).
func (f transcriptFinding) entryProblems(opts sessions.CheckOptions) []sessions.Problem {
	msgs, comps := f.stored1, f.stored2
	p := sessions.Problem{Path: "entries " + f.key, Agent: f.agent, Key: f.key, SessionID: f.sessionID}
	if f.rows == 0 {
		p.Code, p.Fixable = sessions.CodeMissingTranscript, true
		p.Message = fmt.Sprintf("messageCount %d but its transcript %s has no rows", msgs, f.sessionID)
		p.Fix = "zero the entry's counters so they match the empty transcript (the messages are lost)"
		return []sessions.Problem{p}
	}
	var out []sessions.Problem
	if !f.flag {
		m := p
		m.Code, m.Path = sessions.CodeMissingTranscript, "transcript_entries "+f.sessionID
		m.Message = fmt.Sprintf("the transcript of %s has %d rows but no session header (rows were deleted outside the gateway)",
			f.key, f.rows)
		out = append(out, m)
	}
	if (msgs != f.messages || comps != f.third) && (f.newest == nil || !opts.Settling(*f.newest)) {
		p.Code, p.Fixable = sessions.CodeCounterLag, true
		p.Message = fmt.Sprintf("messageCount %d, compactionCount %d; its transcript %s has %d and %d",
			msgs, comps, f.sessionID, f.messages, f.third)
		p.Fix = "set them from the transcript rows"
		out = append(out, p)
	}
	return out
}

// headProblem: a transcript's head row (the next seq, the leaf, the
// message count Stats reads) missing, left without rows, or behind them.
func (f transcriptFinding) headProblem() sessions.Problem {
	p := sessions.Problem{Code: sessions.CodeCounterLag, Path: "transcript_heads " + f.sessionID,
		SessionID: f.sessionID, Fixable: true}
	lastSeq, msgs := f.stored1, f.stored2
	switch {
	case !f.flag:
		p.Message = fmt.Sprintf("no head row for the transcript's %d rows: its next append would start it again at seq 1 and fail",
			f.rows)
		p.Fix = "recreate the head from the rows"
	case f.rows == 0:
		p.Message = fmt.Sprintf("a head row (last seq %d) but no transcript rows: "+
			"the next append would not write the session header", lastSeq)
		p.Fix = "remove the head row (the next append starts the transcript with its header)"
	default:
		p.Message = fmt.Sprintf("last seq %d and %d messages; the transcript rows have last seq %d and %d messages",
			lastSeq, msgs, f.third, f.messages)
		p.Fix = "recompute the head from the rows"
	}
	return p
}

// orphanHeader is what an orphan's session header names.
type orphanHeader struct {
	ID         string `json:"id"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId"`
}

// orphanProblem: transcript rows that no entry and no archived session
// name. With a usable header they become an archived session of its key,
// or of the key it moved to (moves: a chat whose id changed, whose
// session RenameKey moved; the header keeps the key the session started
// under); without one they need a human.
func (f transcriptFinding) orphanProblem(moves sessions.KeyMoves) sessions.Problem {
	p := sessions.Problem{Code: sessions.CodeOrphanTranscript, Path: "transcript_entries " + f.sessionID, SessionID: f.sessionID}
	var h orphanHeader
	if f.header == nil || json.Unmarshal([]byte(*f.header), &h) != nil || h.ID != f.sessionID {
		p.Message = fmt.Sprintf("transcript without an entry, an archived session or a usable session header (%d rows, %d messages)",
			f.rows, f.messages)
		return p
	}
	k, err := routing.Parse(h.SessionKey)
	if err != nil || (h.AgentID != "" && h.AgentID != k.Agent) {
		p.Message = fmt.Sprintf("transcript without an entry or an archived session; its header key %q (agent %q) is not usable",
			h.SessionKey, h.AgentID)
		return p
	}
	moved := ""
	if to := moves.Resolve(k); to.Canonical() != k.Canonical() && to.Agent == k.Agent {
		moved = fmt.Sprintf(" (its chat moved: the header's key %s is now %s)", k, to)
		k = to
	}
	key := k.String()
	p.Agent, p.Key, p.Fixable = k.Agent, key, true
	p.Message = fmt.Sprintf("transcript of %s (%d messages) named by no entry and no archived session%s", key, f.messages, moved)
	p.Fix = "record it as an archived session of " + key + " (reason " + RepairReason +
		"), listed with the key's archive and switchable back to; no row is changed"
	return p
}

// checkBacklogSQL counts the pending records and the replies not
// delivered, and finds the oldest of them.
const checkBacklogSQL = `SELECT
	(SELECT count(*) FROM delivery_records WHERE state = 'pending'),
	(SELECT count(*) FROM delivery_replies),
	LEAST((SELECT min(accepted_at) FROM delivery_records WHERE state = 'pending'),
		(SELECT min(created_at) FROM delivery_replies))`

// checkUnknownAgentsSQL finds, per agent, the pending records and replies
// older than $1 of agents with no entry and no archived session.
const checkUnknownAgentsSQL = `WITH d AS (
	SELECT agent_id COLLATE "C" AS agent_id, false AS reply, accepted_at AS at FROM delivery_records WHERE state = 'pending'
	UNION ALL
	SELECT agent_id COLLATE "C", true, created_at FROM delivery_replies)
SELECT d.agent_id, count(*) FILTER (WHERE NOT d.reply), count(*) FILTER (WHERE d.reply), min(d.at)
FROM d
WHERE d.agent_id <> '' AND d.at < $1
	AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.agent_id = d.agent_id)
	AND NOT EXISTS (SELECT 1 FROM archived a WHERE a.agent_id = d.agent_id)
GROUP BY d.agent_id ORDER BY d.agent_id`

// checkDelivery reports the delivery tables' backlog and the rows of
// agents the index does not know; both need a human (a daemon to run, an
// agent to configure), so neither is fixable.
func checkDelivery(ctx context.Context, tx pgx.Tx, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	var (
		out              []sessions.Problem
		records, replies int
		oldest           *time.Time
	)
	if err := tx.QueryRow(ctx, checkBacklogSQL).Scan(&records, &replies, &oldest); err != nil {
		return nil, err
	}
	if oldest != nil && opts.Now.Sub(*oldest) > opts.BacklogAfter {
		out = append(out, sessions.Problem{Code: sessions.CodeJournalBacklog, Path: "delivery_records",
			Message: fmt.Sprintf("%d message(s) and %d repl(ies) waiting, the oldest accepted %s: is the daemon running?",
				records, replies, oldest.Local().Format("2006-01-02 15:04"))})
	}
	rows, err := tx.Query(ctx, checkUnknownAgentsSQL, opts.Now.Add(-unknownAgentAfter))
	if err != nil {
		return nil, err
	}
	var (
		agent string
		at    time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&agent, &records, &replies, &at}, func() error {
		out = append(out, sessions.Problem{Code: CodeDeliveryUnknownAgent, Path: "delivery_records", Agent: agent,
			Message: fmt.Sprintf("%d pending message(s) and %d repl(ies) of agent %s, which has no session (current or archived), "+
				"the oldest accepted %s: is the agent configured, and is a daemon running?",
				records, replies, agent, at.Local().Format("2006-01-02 15:04"))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Check is the database's Check (DB.Check).
func (b *Backend) Check(ctx context.Context, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	return b.db.Check(ctx, opts)
}

// Repair is the database's Repair (DB.Repair).
func (b *Backend) Repair(ctx context.Context, problems []sessions.Problem, opts sessions.CheckOptions) []error {
	return b.db.Repair(ctx, problems, opts)
}
