package pgstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// Begin's touch with the turn's inputs appended in the same statement
// (sessions.InputsAhead, issue 21): at a steady pace a message cost a
// round trip for the touch (the session id it returns says where the
// inputs go) and another for the inputs' append; now one. The inputs go to
// the session this process last began for the key (heads): the statement
// touches the key's row only if it still holds that session and its
// clocks are fresh (touchFreshSQL's bounds, and the session id as in
// touchSQL), and appends only when the touch returned a row (a CTE), so
// the touch and the append commit together or not at all. A session
// created, rolled over (daily, idle, /new, another replica's reset) or not
// the one expected touches nothing and appends nothing: Begin goes on as
// before and the turn appends its inputs to the session Begin returns.

// maxHeads bounds lastSessions; past it the map starts over (a key not in
// it only costs its next message the round trip saved here).
const maxHeads = 100_000

// lastSessions maps agent and key to the session id this process last
// saw Begin return (or Reset, Switch make current) for them.
type lastSessions struct {
	mu sync.Mutex
	m  map[string]string
}

func (l *lastSessions) get(agentID, k string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[agentID+"\x00"+k]
}

// note sets k's session to sessionID unless one is set already: a read's
// (Store.Get, an accept's QueuePeek) may predate a Begin's, whose is the
// one to keep. Either is only a guess: touchAheadSQL checks the session id
// itself.
func (l *lastSessions) note(agentID, k, sessionID string) { l.put(agentID, k, sessionID, false) }

func (l *lastSessions) set(agentID, k, sessionID string) { l.put(agentID, k, sessionID, true) }

// put sets k's session to sessionID, over one already set if replace.
func (l *lastSessions) put(agentID, k, sessionID string, replace bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := agentID + "\x00" + k
	if _, ok := l.m[key]; ok && !replace {
		return
	}
	if l.m == nil || len(l.m) >= maxHeads {
		l.m = map[string]string{}
	}
	l.m[key] = sessionID
}

// touchAheadSQL is touchSQL restricted to touchFreshSQL's bounds: $1 agent,
// $2 key, $3 the session id expected, $15 and $16 the bounds.
const touchAheadSQL = `UPDATE entries SET ` + touchSet + `
	WHERE agent_id = $1 AND session_key = $2 AND session_id = $3
	AND session_started_at >= $15::timestamptz AND last_interaction_at >= $16::timestamptz
	RETURNING ` + entryColumns

// touchArgCount is how many arguments touchAheadSQL takes.
const touchArgCount = 16

var paramRE = regexp.MustCompile(`\$(\d+)`)

// shiftParams renumbers sql's parameters $n to $(n+by).
func shiftParams(sql string, by int) string {
	return paramRE.ReplaceAllStringFunc(sql, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+by)
	})
}

// withTouch makes an append statement (chainSQL, chainOneSQL: its
// arguments first) conditional on touchAheadSQL (its arguments after
// them): the head row is written only from the touched row, and the
// statement returns the touched entry with each appended row's seq, id and
// parent (NULL when nothing was appended), no row when nothing was touched.
func withTouch(chain string) string {
	last := 0 // the highest parameter the append takes
	for _, m := range paramRE.FindAllStringSubmatch(chain, -1) {
		v, _ := strconv.Atoi(m[1])
		last = max(last, v)
	}
	steps := []struct{ old, new string }{
		{`WITH moved AS (`, `WITH touched AS (` + shiftParams(touchAheadSQL, last) + `),
moved AS (`},
		{"WHERE h.session_id = $1\n", "WHERE h.session_id = $1 AND EXISTS (SELECT FROM touched)\n"},
		{`SELECT $1, $2::bigint + 1, $3, $4::bigint WHERE`, `SELECT $1, $2::bigint + 1, $3, $4::bigint FROM touched WHERE`},
		{"\nINSERT INTO transcript_entries", ",\nins AS (INSERT INTO transcript_entries"},
		{`RETURNING seq, id, COALESCE(parent_id, '')`, `RETURNING seq, id, COALESCE(parent_id, '') AS parent)
SELECT touched.*, ins.seq, ins.id, ins.parent FROM touched LEFT JOIN ins ON true`},
	}
	for _, s := range steps {
		if strings.Count(chain, s.old) != 1 {
			panic("pgstore: append statement changed; withTouch cannot rewrite it: " + s.old)
		}
		chain = strings.Replace(chain, s.old, s.new, 1)
	}
	return chain
}

var (
	chainTouchSQL    = withTouch(chainSQL)
	chainOneTouchSQL = withTouch(chainOneSQL)
)

// chainArgCount is how many arguments chainSQL and chainOneSQL take.
const chainArgCount = 16

// rowsScan scans an entry's columns and then extra from rows.
type rowsScan struct {
	rows  pgx.Rows
	extra []any
}

func (r rowsScan) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.extra...)...) }

// touchAhead is Begin's fresh touch (touchFreshSQL's bounds started and
// last) of the session sessionID expected for key k, with in's inputs
// appended to it and the context read after them, in one write (with the
// counters queued for the key, before it). With no error the write
// committed (the counters with it), and touched reports that the session
// was fresh and still sessionID: then e is its entry and the inputs are
// appended (in.Take called). An error with refused (the server refused
// the write, the lease moved on, or nothing was sent) wrote nothing;
// other errors leave the outcome unknown.
func (x *Index) touchAhead(ctx context.Context, k, sessionID string, o sessions.Origin, now, started, last time.Time,
	counters []counterReq, in *sessions.InputsAhead) (e sessions.Entry, touched, refused bool, err error) {
	t, err := x.db.Transcript(sessionID, transcript.Header{SessionKey: k, AgentID: x.agentID})
	if err != nil {
		return sessions.Entry{}, false, true, err
	}
	msgs := in.Msgs
	entries, err := t.encodeMessages(msgs, now)
	if err != nil {
		return sessions.Entry{}, false, true, err
	}
	sql, args, err := t.chainArgs(entries, len(msgs), now, touchArgCount)
	if err != nil {
		return sessions.Entry{}, false, true, err
	}
	if sql == chainOneSQL {
		sql = chainOneTouchSQL
	} else {
		sql = chainTouchSQL
	}
	if len(args) != chainArgCount {
		return sessions.Entry{}, false, true, fmt.Errorf("append statement takes %d arguments, not %d", len(args), chainArgCount)
	}
	args = append(x.appendTouchArgs(args, k, sessionID, o, now), started, last)
	read := t.contextRead()
	read.exclude(entries)
	var fence *sessions.Fence
	if f, ok := sessions.FenceFrom(ctx); ok {
		fence = &f // the inputs' append is the turn's: written only while its lease is held
	}
	var (
		written []writtenRow
		found   bool
	)
	err = x.db.writes.do(ctx, &write{op: opOf(ctx), key: rowKey("e", x.agentID, k), fill: func(b *pgx.Batch) {
		written, found = nil, false
		if fence != nil {
			queueFence(b, *fence)
		}
		x.db.counters.queueBatch(b, counters)
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			// Value types, not pointers: pgx allocates nothing for them
			// (issue 21); each row sets them all.
			var w struct {
				seq        pgtype.Int8
				id, parent pgtype.Text
			}
			extra := []any{&w.seq, &w.id, &w.parent}
			for rows.Next() {
				got, err := scanEntry(rowsScan{rows, extra})
				if err != nil {
					return err
				}
				e, found = got, true
				if w.seq.Valid && w.id.Valid && w.parent.Valid {
					written = append(written, writtenRow{seq: w.seq.Int64, id: w.id.String, parent: w.parent.String})
				}
			}
			return rows.Err()
		})
		rs, rargs := read.statement()
		b.Queue(rs, rargs...).Query(read.scan)
	}})
	if err != nil {
		if ferr, ok := fenced(err); ok {
			err = ferr
		}
		var pe *pgconn.PgError
		return sessions.Entry{}, false, errors.As(err, &pe) || errors.Is(err, sessions.ErrFenced), err
	}
	if !found {
		return sessions.Entry{}, false, false, nil
	}
	if len(written) == 0 {
		// Touched, nothing appended (never expected): the turn appends.
		return e, true, false, nil
	}
	t.appended(read, entries, written)
	ids := make([]string, len(entries))
	for i, p := range entries {
		ids[i] = p.id
	}
	var cp *sessions.Context
	if c, cerr := t.contextFrom(withOp(ctx, OpContext), read); cerr == nil {
		cp = &c
	}
	in.Take(ids, cp)
	return e, true, false, nil
}
