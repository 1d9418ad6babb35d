package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// pathHeads starts the locator (Problem.Path) of a head row's finding.
const pathHeads = "transcript_heads "

// repairKind is what Repair does for a problem; each kind is one
// set-based statement over every problem of that kind.
type repairKind int

const (
	repairNone          repairKind = iota // needs a human
	repairZeroCounters                    // missing-transcript: counters to 0
	repairEntryCounters                   // counter-lag of an entry: set from the rows
	repairHeads                           // counter-lag of a head: rebuilt from the rows
	repairOrphans                         // orphan-transcript: archived as recovered
	repairKinds
)

// repairKindOf says how p is repaired; problems not made by Check (no
// session id, or no key where the repair needs one) are not fixable.
func repairKindOf(p sessions.Problem) repairKind {
	if !p.Fixable || p.SessionID == "" {
		return repairNone
	}
	keyed := p.Agent != "" && p.Key != ""
	switch {
	case p.Code == sessions.CodeMissingTranscript && keyed:
		return repairZeroCounters
	case p.Code == sessions.CodeCounterLag && strings.HasPrefix(p.Path, pathHeads):
		return repairHeads
	case p.Code == sessions.CodeCounterLag && keyed:
		return repairEntryCounters
	case p.Code == sessions.CodeOrphanTranscript && keyed:
		return repairOrphans
	}
	return repairNone
}

// Repair fixes the fixable problems Check found on this database and
// returns one error per problem: nil when it was repaired (or turned out
// fixed meanwhile), sessions.ErrNotFixable when it needs a human.
//
// It holds the daemon lock exclusively (LockExclusive) while it works, so
// it refuses while a daemon or a storage migration uses the database
// (every fixable problem then gets that error, wrapping ErrInUse) and no
// daemon starts meanwhile. Each kind of repair is one statement over all
// its problems that re-reads what it changes, so a problem fixed
// meanwhile is left alone: entry counters are set from the transcript
// rows (zeroed when there are none), head rows are rebuilt from the rows
// (or removed when there are none), and orphaned transcripts are
// recorded as archived sessions of their header's key (reason
// RepairReason), so they can be listed and switched back to. No
// transcript row is changed or deleted.
func (db *DB) Repair(ctx context.Context, problems []sessions.Problem, opts sessions.CheckOptions) []error {
	errs := make([]error, len(problems))
	var groups [repairKinds][]sessions.Problem
	var members [repairKinds][]int
	some := false
	for i, p := range problems {
		k := repairKindOf(p)
		if k == repairNone {
			errs[i] = sessions.ErrNotFixable
			continue
		}
		groups[k], members[k], some = append(groups[k], p), append(members[k], i), true
	}
	if !some {
		return errs
	}
	fail := func(k repairKind, err error) {
		for _, i := range members[k] {
			errs[i] = fmt.Errorf("pgstore: repair %s: %w", problems[i].Code, err)
		}
	}
	release, err := db.LockExclusive(ctx)
	if err != nil {
		for k := range repairKinds {
			for _, i := range members[k] {
				errs[i] = fmt.Errorf("pgstore: repair refused: %w", err)
			}
		}
		return errs
	}
	defer release()
	now := opts.Now
	if now.IsZero() {
		now = db.clock()
	}
	run := [repairKinds]func(context.Context, []sessions.Problem, time.Time) error{
		repairZeroCounters:  db.zeroCounters,
		repairEntryCounters: db.recount,
		repairHeads:         db.rebuildHeads,
		repairOrphans:       db.archiveOrphans,
	}
	for k := repairZeroCounters; k < repairKinds; k++ {
		if len(groups[k]) == 0 {
			continue
		}
		if err := run[k](ctx, groups[k], now); err != nil {
			fail(k, err)
		}
	}
	return errs
}

// keyed returns the agents, keys and session ids of ps as arrays.
func keyed(ps []sessions.Problem) (agents, keys, ids []string) {
	for _, p := range ps {
		agents, keys, ids = append(agents, p.Agent), append(keys, p.Key), append(ids, p.SessionID)
	}
	return agents, keys, ids
}

// zeroCounters zeroes the counters of entries whose transcript has no
// rows, as the files backend does for a missing transcript.
func (db *DB) zeroCounters(ctx context.Context, ps []sessions.Problem, _ time.Time) error {
	agents, keys, ids := keyed(ps)
	_, err := db.pool.Exec(ctx, `UPDATE entries e SET message_count = 0, compaction_count = 0, compaction_offset = 0,
			context_tokens = 0, input_tokens = 0, output_tokens = 0, total_tokens = 0
		FROM unnest($1::text[], $2::text[], $3::text[]) AS u(agent, key, sid)
		WHERE e.agent_id = u.agent AND e.session_key = u.key AND e.session_id = u.sid
			AND NOT EXISTS (SELECT 1 FROM transcript_entries t WHERE t.session_id = u.sid)`, agents, keys, ids)
	return err
}

// recount sets the entries' messageCount and compactionCount from their
// transcript rows.
func (db *DB) recount(ctx context.Context, ps []sessions.Problem, _ time.Time) error {
	agents, keys, ids := keyed(ps)
	_, err := db.pool.Exec(ctx, `UPDATE entries e SET message_count = c.messages, compaction_count = c.compactions
		FROM (SELECT u.agent, u.key, u.sid,
				(SELECT count(*) FROM transcript_entries t WHERE t.session_id = u.sid AND t.type = 'message') AS messages,
				(SELECT count(*) FROM transcript_entries t WHERE t.session_id = u.sid AND t.type = 'compaction') AS compactions
			FROM unnest($1::text[], $2::text[], $3::text[]) AS u(agent, key, sid)) c
		WHERE e.agent_id = c.agent AND e.session_key = c.key AND e.session_id = c.sid
			AND (e.message_count <> c.messages OR e.compaction_count <> c.compactions)`, agents, keys, ids)
	return err
}

// rebuildHeadsSQL writes the head of each transcript with rows as appends
// leave it (the transfer's insertHeadSQL): the next seq past the highest
// row (never lowered), the message count, and for a head that was missing
// or behind the rows the last entry that is not the header as the leaf.
const rebuildHeadsSQL = `INSERT INTO transcript_heads AS h (session_id, last_seq, leaf_id, prev_leaf_id, messages)
SELECT t.session_id, max(t.seq),
	(SELECT x.id FROM transcript_entries x WHERE x.session_id = t.session_id AND x.type <> 'session'
		ORDER BY x.seq DESC LIMIT 1),
	'', count(*) FILTER (WHERE t.type = 'message')
FROM transcript_entries t WHERE t.session_id = ANY($1::text[]) GROUP BY t.session_id
ON CONFLICT (session_id) DO UPDATE SET
	leaf_id = CASE WHEN h.last_seq < excluded.last_seq THEN excluded.leaf_id ELSE h.leaf_id END,
	last_seq = GREATEST(h.last_seq, excluded.last_seq),
	messages = excluded.messages`

// rebuildHeads recomputes the head rows of the problems' transcripts from
// their rows, and removes those of transcripts without rows (an append
// then starts the transcript afresh, with its header).
func (db *DB) rebuildHeads(ctx context.Context, ps []sessions.Problem, _ time.Time) error {
	_, _, ids := keyed(ps)
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, rebuildHeadsSQL, ids); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM transcript_heads h WHERE h.session_id = ANY($1::text[])
			AND NOT EXISTS (SELECT 1 FROM transcript_entries t WHERE t.session_id = h.session_id)`, ids)
		return err
	})
}

// archiveOrphansSQL records orphaned transcripts as archived sessions:
// started at their first row, updated at their last, with their message
// count; one still named by no entry and no archived session only.
const archiveOrphansSQL = `INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, title,
	session_started_at, updated_at, message_count, total_tokens, deleted)
SELECT u.agent, u.key, u.sid, $5, $6, u.title, min(t.created_at), max(t.created_at),
	count(*) FILTER (WHERE t.type = 'message'), 0, false
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(agent, key, sid, title)
JOIN transcript_entries t ON t.session_id = u.sid
WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.session_id = u.sid)
	AND NOT EXISTS (SELECT 1 FROM archived a WHERE a.session_id = u.sid)
GROUP BY u.agent, u.key, u.sid, u.title`

// archiveOrphans records the problems' orphaned transcripts as archived
// sessions of their keys, titled by their first user message.
func (db *DB) archiveOrphans(ctx context.Context, ps []sessions.Problem, now time.Time) error {
	agents, keys, ids := keyed(ps)
	titles, err := db.firstUserTitles(ctx, ids)
	if err != nil {
		return err
	}
	ts := make([]string, len(ids))
	for i, id := range ids {
		ts[i] = titles[id]
	}
	_, err = db.pool.Exec(ctx, archiveOrphansSQL, agents, keys, ids, ts, RepairReason, now)
	return err
}

// firstUserTitles titles each transcript of ids by its first user
// message with text (the rows the search trigger marked as such) that
// came in to the session (it carries journal record ids), else its first
// user message: a forked thread's transcript starts with its parent's
// messages, copied without record ids (sessions.ForkContext).
func (db *DB) firstUserTitles(ctx context.Context, ids []string) (map[string]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT ON (session_id) session_id, seq, body::text FROM transcript_entries
		WHERE session_id = ANY($1::text[]) AND type = 'message' AND search_role = 'user'
		ORDER BY session_id, (body->'recordIds' IS NOT NULL) DESC, seq`, ids)
	if err != nil {
		return nil, err
	}
	titles := map[string]string{}
	var (
		id, body string
		seq      int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &seq, &body}, func() error {
		c := transcript.NewChain(false)
		if c.Add([]byte(body), seq) != nil {
			return nil // untitled: the body is not an entry this version reads
		}
		if h := c.History(); len(h) > 0 {
			titles[id] = sessions.StoredTitle(h[0].Text())
		}
		return nil
	})
	return titles, err
}
