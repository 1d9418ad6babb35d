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
	"go.uber.org/zap"

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
// arguments first) conditional on a touch (touchAheadSQL, or with anyID
// touchFreshSQL: its arguments after them): the head row is written only
// from the touched row, and the statement returns the touched entry with
// each appended row's seq, id and parent (NULL when nothing was
// appended), no row when nothing was touched. With anyID the session is
// the one the touch found, whatever its id: the append takes the id from
// the touched row, and a transcript's first append writes the session
// header with that id spliced between $5 and $6, the header's text before
// and after its id (splitHeader).
func withTouch(chain, touch string, anyID bool) string {
	last := 0 // the highest parameter the append takes
	for _, m := range paramRE.FindAllStringSubmatch(chain, -1) {
		v, _ := strconv.Atoi(m[1])
		last = max(last, v)
	}
	steps := []struct{ old, new string }{
		{`WITH moved AS (`, `WITH touched AS (` + shiftParams(touch, last) + `),
moved AS (`},
		{"WHERE h.session_id = $1\n", "WHERE h.session_id = $1 AND EXISTS (SELECT FROM touched)\n"},
		{`SELECT $1, $2::bigint + 1, $3, $4::bigint WHERE`, `SELECT $1, $2::bigint + 1, $3, $4::bigint FROM touched WHERE`},
		{"\nINSERT INTO transcript_entries", ",\nins AS (INSERT INTO transcript_entries"},
		{`RETURNING seq, id, COALESCE(parent_id, '')`, `RETURNING seq, id, COALESCE(parent_id, '') AS parent)
SELECT touched.*, ins.seq, ins.id, ins.parent FROM touched LEFT JOIN ins ON true`},
	}
	if anyID {
		steps[1].new = "WHERE h.session_id = (SELECT session_id FROM touched)\n"
		// $1 (no id) is still typed, as touchFreshSQL's $3 is.
		steps[2].new = `SELECT touched.session_id, $2::bigint + 1, $3, $4::bigint FROM touched WHERE $1::text IS NOT NULL AND`
		steps = append(steps,
			struct{ old, new string }{"$5::text AS id", "(SELECT session_id FROM touched) AS id"},
			struct{ old, new string }{"$6::text AS body", "$5::text || to_json((SELECT session_id FROM touched))::text || $6::text AS body"},
			struct{ old, new string }{"SELECT $1, rows.seq", "SELECT (SELECT session_id FROM touched), rows.seq"})
	}
	for _, s := range steps {
		if strings.Count(chain, s.old) != 1 {
			panic("pgstore: append statement changed; withTouch cannot rewrite it: " + s.old)
		}
		chain = strings.Replace(chain, s.old, s.new, 1)
	}
	return chain
}

// headerMark stands for the session id in a header split by splitHeader.
const headerMark = "00000000-0000-4000-8000-000000000000"

// splitHeader is the session header of a transcript of hdr's session,
// created at now, as the text before its id and the text after it (a
// JSON string): the id comes first of the header's strings, before any
// field an operator or a chat could set.
func splitHeader(hdr transcript.Header, now time.Time) (before, after string, err error) {
	b, err := transcript.EncodeHeader(headerMark, hdr, now)
	if err != nil {
		return "", "", err
	}
	before, after, ok := strings.Cut(string(b), `"`+headerMark+`"`)
	if !ok {
		return "", "", errors.New("session header without its id")
	}
	return before, after, nil
}

// gated is an append statement made conditional on Begin's own
// (withTouch), for one entry (chainOneSQL's) and for several (chainSQL's).
type gated struct{ one, many string }

func gate(touch string, anyID bool) gated {
	return gated{one: withTouch(chainOneSQL, touch, anyID), many: withTouch(chainSQL, touch, anyID)}
}

// of is g's statement for the append chainArgs chose (sql).
func (g gated) of(sql string) string {
	if sql == chainOneSQL {
		return g.one
	}
	return g.many
}

var (
	chainTouch    = gate(touchAheadSQL, false) // the session expected
	chainTouchAny = gate(touchFreshSQL, true)  // whatever fresh session the key holds
)

// loadTailKeySQL is loadTailSQL for the session the entry of ($1 agent,
// $2 key) holds if its updated_at is $3: run after a touch of any session
// at $3 in the same transaction, it reads the session the touch found, and
// nothing when the touch found none (a stale session about to roll over,
// whose tail is of no use). A clock ahead of $3 where the entry was last
// written skips the read too: the turn then reads the context itself.
var loadTailKeySQL = regexp.MustCompile(`\$1\b`).ReplaceAllLiteralString(loadTailSQL,
	"(SELECT session_id FROM entries WHERE agent_id = $1 AND session_key = $2 AND updated_at = $3::timestamptz)")

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
// counters queued for the key, before it). With sessionID empty it
// touches the key's session whatever its id (one this process has not
// begun: created or reset by another replica, or before a restart), as
// touchFreshSQL does. With no error the write committed (the counters with
// it), and touched reports that the session was fresh and, when expected,
// still sessionID: then e is its entry and the inputs are appended
// (in.Take called). An error with refused (the server refused the write,
// the lease moved on, or nothing was sent) wrote nothing; other errors
// leave the outcome unknown.
func (x *Index) touchAhead(ctx context.Context, k, sessionID string, o sessions.Origin, now, started, last time.Time,
	counters []counterReq, in *sessions.InputsAhead) (e sessions.Entry, touched, refused bool, err error) {
	w, err := x.newInputsWrite(k, sessionID, in, now)
	if err != nil {
		return sessions.Entry{}, false, true, err
	}
	g := chainTouch
	if sessionID == "" {
		g = chainTouchAny
	}
	w.sql = g.of(w.sql)
	w.args = append(x.appendTouchArgs(w.args, k, sessionID, o, now), started, last)
	w.before = func(b *pgx.Batch) { x.db.counters.queueBatch(b, counters) }
	return x.writeInputs(ctx, k, w, in, false)
}

// inputsWrite is a write of Begin that appends a turn's inputs: an
// append statement made conditional on Begin's own (withTouch), then the
// context read.
type inputsWrite struct {
	t       *TranscriptLog // unbound (no session id) until the write tells it
	entries []pending
	sql     string
	args    []any
	read    *contextRead
	rs      string // the read's statement and arguments
	rargs   []any
	before  func(b *pgx.Batch) // queues what goes before the statement; nil: nothing
	after   func(b *pgx.Batch) // queues what goes after the read; nil: nothing
}

// newInputsWrite encodes in's inputs for the session sessionID of key k
// and plans the context read after them; the append statement is
// chainSQL's or chainOneSQL's, for the caller to make conditional (a
// gated's of) and add its own arguments to. With sessionID empty the
// session is the one Begin's statement finds (chainTouchAny): the header's
// text goes as the two parts around its id (splitHeader) and the read is
// of the key's session (loadTailKeySQL).
func (x *Index) newInputsWrite(k, sessionID string, in *sessions.InputsAhead, now time.Time) (*inputsWrite, error) {
	hdr := transcript.Header{SessionKey: k, AgentID: x.agentID}
	w := &inputsWrite{t: x.db.transcriptLog(sessionID, hdr)}
	if sessionID != "" {
		if err := sessions.CheckSessionID(sessionID); err != nil {
			return nil, err
		}
	}
	var err error
	if w.entries, err = w.t.encodeMessages(in.Msgs, now); err != nil {
		return nil, err
	}
	if w.sql, w.args, err = w.t.chainArgs(w.entries, len(in.Msgs), now, touchArgCount); err != nil {
		return nil, err
	}
	if len(w.args) != chainArgCount {
		return nil, fmt.Errorf("append statement takes %d arguments, not %d", len(w.args), chainArgCount)
	}
	if sessionID == "" {
		if w.args[4], w.args[5], err = splitHeader(hdr, now); err != nil {
			return nil, err
		}
		w.read, w.rs, w.rargs = &contextRead{}, loadTailKeySQL, []any{x.agentID, k, now}
		return w, nil
	}
	w.read = w.t.contextRead()
	w.read.exclude(w.entries)
	w.rs, w.rargs = w.read.statement()
	return w, nil
}

// writeInputs runs w for key k's row (synchronously committed if sync):
// found reports that its statement returned the entry e (Begin's own
// statement applied), and then, when it appended the inputs, in.Take is
// called with their ids and the context read after them. An error with
// refused (the server refused the write, the lease moved on, or nothing
// was sent) wrote nothing; other errors leave the outcome unknown.
func (x *Index) writeInputs(ctx context.Context, k string, w *inputsWrite, in *sessions.InputsAhead, sync bool) (e sessions.Entry, found, refused bool, err error) {
	var fence *sessions.Fence
	if f, ok := sessions.FenceFrom(ctx); ok {
		fence = &f // the inputs' append is the turn's: written only while its lease is held
	}
	var written []writtenRow
	err = x.db.writes.do(ctx, &write{op: opOf(ctx), key: rowKey("e", x.agentID, k), sync: sync, fill: func(b *pgx.Batch) {
		written, found = nil, false
		if fence != nil {
			queueFence(b, *fence)
		}
		if w.before != nil {
			w.before(b)
		}
		b.Queue(w.sql, w.args...).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			// Value types, not pointers: pgx allocates nothing for them
			// (issue 21); each row sets them all.
			var r struct {
				seq        pgtype.Int8
				id, parent pgtype.Text
			}
			extra := []any{&r.seq, &r.id, &r.parent}
			for rows.Next() {
				got, err := scanEntry(rowsScan{rows, extra})
				if err != nil {
					return err
				}
				e, found = got, true
				if r.seq.Valid && r.id.Valid && r.parent.Valid {
					written = append(written, writtenRow{seq: r.seq.Int64, id: r.id.String, parent: r.parent.String})
				}
			}
			return rows.Err()
		})
		b.Queue(w.rs, w.rargs...).Query(w.read.scan)
		if w.after != nil {
			w.after(b)
		}
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
		// Found, nothing appended (never expected): the turn appends.
		return e, true, false, nil
	}
	if w.t.sessionID == "" {
		w.t.sessionID, w.read.sessionID = e.SessionID, e.SessionID
	}
	w.t.appended(w.read, w.entries, written)
	ids := make([]string, len(w.entries))
	for i, p := range w.entries {
		ids[i] = p.id
	}
	var cp *sessions.Context
	if w.read.cc != nil || len(w.read.tail.Entries) > 0 { // a tail read that found nothing did not read (loadTailKeySQL)
		if c, cerr := w.t.contextFrom(withOp(ctx, OpContext), w.read); cerr == nil {
			cp = &c
		}
	}
	in.Take(ids, cp)
	return e, true, false, nil
}

// beginAhead is Begin's fresh touch (bounds started and last) with in's
// inputs: of the session this process began last for k, then, when that
// is no longer the key's fresh session (or none is remembered), of
// whatever session k holds fresh. done: e is the session touched, its
// inputs appended. none: no session under
// k is fresh (the touch of any found none: touchFreshSQL would find none
// either). *counters are cleared once a write carried them. An error
// leaves the outcome unknown; a write the server refused is logged and
// leaves Begin to its other paths.
func (x *Index) beginAhead(ctx context.Context, k string, o sessions.Origin, now, started, last time.Time,
	counters *[]counterReq, in *sessions.InputsAhead) (e sessions.Entry, done, none bool, err error) {
	ids := []string{""}
	if expected := x.db.heads.get(x.agentID, k); expected != "" {
		ids = []string{expected, ""}
	}
	for _, id := range ids {
		e, touched, refused, err := x.touchAhead(ctx, k, id, o, now, started, last, *counters, in)
		switch {
		case err == nil && touched:
			*counters = nil
			return e, true, false, nil
		case err == nil:
			*counters = nil
		case !refused:
			return sessions.Entry{}, false, false, err
		default:
			x.db.log.Debug("inputs not appended with the touch; the turn appends them", zap.Error(err))
			return sessions.Entry{}, false, false, nil
		}
	}
	return sessions.Entry{}, false, true, nil
}
