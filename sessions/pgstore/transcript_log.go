package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// TranscriptLog is one session's transcript in PostgreSQL with the files
// backend's semantics (transcript.File, SPEC §3.4): pi-coding-agent v3
// entries whose bodies are the bytes the files backend writes as lines,
// chained by parent ids, with the context rebuilt from the latest
// compaction by the same code (transcript.Chain). Every read asks the
// database, so replicas sharing it see each other's appends at once;
// Context keeps the chain it decoded in the DB's cache (transcript_cache.go)
// so that the next one decodes only the entries appended since, and the
// entries this DB appends go into that chain as it holds them, never
// decoded again (transcript_appended.go). It is safe for concurrent use.
//
// Appends go through the DB's group commit (writegroup.go): one statement
// per append reserves seq numbers under the transcript_heads row lock and
// reads the leaf there, so concurrent appends to one session (from any
// process) form one chain, and appends of many sessions share commits with
// each other and with the other short writes.
type TranscriptLog struct {
	db        *DB
	sessionID string
	hdr       transcript.Header
	rand      func() uint32
}

var _ sessions.TranscriptLog = (*TranscriptLog)(nil)

// Transcript returns session sessionID's transcript; hdr is what its
// session header records when the first append writes it. sessionID must
// be a canonical UUID. It does no I/O.
func (db *DB) Transcript(sessionID string, hdr transcript.Header) (*TranscriptLog, error) {
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("pgstore: transcript: %w", err)
	}
	return db.transcriptLog(sessionID, hdr), nil
}

// transcriptLog is Transcript without the id's check: Begin's write of a
// turn's inputs to a session it learns only from the write takes one with
// no id yet (begin_inputs.go).
func (db *DB) transcriptLog(sessionID string, hdr transcript.Header) *TranscriptLog {
	return &TranscriptLog{db: db, sessionID: sessionID, hdr: hdr, rand: rand.Uint32}
}

// SessionID is the session whose transcript t is.
func (t *TranscriptLog) SessionID() string { return t.sessionID }

// chainSQL appends entries that continue the chain: the update of the
// head row takes its lock (concurrent appends to the session queue there),
// reserves seq numbers, and returns the leaf before this append (prev), the
// parent of the first entry, which the statement splices into its body
// between pre and post. The other entries' parents are in the arguments.
// A new head row (prev NULL) means the transcript is empty: the session
// header goes first, at seq 1. The head is updated by an UPDATE (moved),
// and inserted (made) only when there was none to update, with an upsert
// for a head another append made meanwhile: an upsert that finds the row
// locks it first, one WAL record more than the update's own (issue 21:
// two of a message's ~38, heap LOCK on transcript_heads in pg_waldump). The search columns come computed
// (search_fields.go), the words always (search_tokens.go); a row whose
// search_role is NULL has its role and time from the search trigger. It returns each row's seq, id and parent id, so that the
// appender can add what it wrote to its cached chain (transcript_appended.go).
const chainSQL = `WITH moved AS (
	UPDATE transcript_heads AS h SET last_seq = h.last_seq + $2::bigint, leaf_id = $3,
		prev_leaf_id = COALESCE(h.leaf_id, ''), messages = h.messages + $4::bigint
	WHERE h.session_id = $1
	RETURNING last_seq - $2::bigint AS base, prev_leaf_id AS prev),
made AS (
	INSERT INTO transcript_heads AS h (session_id, last_seq, leaf_id, messages)
	SELECT $1, $2::bigint + 1, $3, $4::bigint WHERE NOT EXISTS (SELECT FROM moved)
	ON CONFLICT (session_id) DO UPDATE SET last_seq = h.last_seq + $2::bigint, leaf_id = excluded.leaf_id,
		prev_leaf_id = COALESCE(h.leaf_id, ''), messages = h.messages + excluded.messages
	RETURNING last_seq - $2::bigint AS base, prev_leaf_id AS prev),
head AS (SELECT base, prev FROM moved UNION ALL SELECT base, prev FROM made),
rows AS (
	SELECT 1::bigint AS seq, $5::text AS id, NULL::text AS parent_id, 'session'::text AS type,
		$6::text AS body, NULL::text AS kept, NULL::text AS srole, NULL::text AS stxt, NULL::bigint AS sat
	FROM head WHERE head.prev IS NULL
	UNION ALL
	SELECT head.base + u.ord, u.id, CASE WHEN u.ord = 1 THEN NULLIF(head.prev, '') ELSE u.parent END, u.type,
		u.pre || CASE WHEN u.ord = 1 THEN COALESCE(to_json(NULLIF(head.prev, ''))::text, 'null')
			ELSE to_json(u.parent)::text END || u.post,
		NULLIF(u.kept, ''), u.srole, u.stxt, u.sat
	FROM head, ` + chainUnnest + `)
INSERT INTO transcript_entries (session_id, seq, id, parent_id, type, body, created_at, first_kept_id,
	search, search_role, search_at)
SELECT $1, rows.seq, rows.id, rows.parent_id, rows.type, rows.body::json, $13::timestamptz, rows.kept,
	array_to_tsvector(string_to_array(rows.stxt, ' ')), rows.srole,
	CASE WHEN rows.stxt IS NOT NULL THEN COALESCE(to_timestamp(rows.sat / 1000.0), $13::timestamptz) END
FROM rows
RETURNING seq, id, COALESCE(parent_id, '')`

// chainUnnest is chainSQL's source of the appended entries: one array
// per column, unnested.
const chainUnnest = `unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
		$14::text[], $15::text[], $16::bigint[])
		WITH ORDINALITY AS u(id, parent, type, pre, post, kept, srole, stxt, sat, ord)`

// chainOneSQL is chainSQL for one entry, the usual append (a turn's
// input, its reply): the entry's columns as scalars, where nine
// one-element arrays cost the server an array decode each and a function
// scan, and the daemon an array encode each (issue 21).
var chainOneSQL = strings.Replace(chainSQL, chainUnnest, `(VALUES ($7::text, $8::text, $9::text, $10::text, $11::text, $12::text,
		$14::text, $15::text, $16::bigint, 1::bigint))
		AS u(id, parent, type, pre, post, kept, srole, stxt, sat, ord)`, 1)

// pending is one entry to append: its body without the parent id.
type pending struct {
	id, parent, typ string
	pre, post       []byte
	kept            string
	// search is the entry's search columns when the encoder computed them
	// from the message (searchFieldsOfMessage); nil: from the body.
	search *searchFields
	// msg is a message entry's normalised message, when decoding its body
	// gives it back (transcript.MessageRoundTrips); nil otherwise and for
	// other entries.
	msg *sessions.Message
}

// idAttempts bounds the retries after a random entry id collided with one
// already in the transcript (1 in 4 billion per id and entry).
const idAttempts = 4

// parentNull is where an entry encoded without a parent says so; the
// entry's type and id come before it, so its first occurrence is the field.
var parentNull = []byte(`,"parentId":null,`)

// split cuts body around the null of its parentId.
func split(body []byte) (pre, post []byte, err error) {
	i := bytes.Index(body, parentNull)
	if i < 0 {
		return nil, nil, errors.New("encoded entry has no parentId field")
	}
	at := i + len(`,"parentId":`)
	return body[:at], body[at+len("null"):], nil
}

// Append writes complete messages as a chain continuing the current leaf
// and returns their entry ids, once committed (durable). A message without
// a timestamp gets the current time.
//
// A sessions.ReplyAhead in ctx (one message: a turn's final answer) is
// stored in the append's transaction when this DB's Delivery can take it
// (reply_ahead.go).
func (t *TranscriptLog) Append(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	return t.appendMessages(ctx, false, nil, t.db.replyAhead(ctx, len(msgs)), msgs)
}

func (t *TranscriptLog) appendMessages(ctx context.Context, lazy bool, read *contextRead, ahead *aheadWrite, msgs []sessions.Message) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return t.appendChain(ctx, len(msgs), lazy, read, ahead, func(now time.Time) ([]pending, error) {
		return t.encodeMessages(msgs, now)
	})
}

// encodeMessages encodes msgs as a chain of entries with new ids.
func (t *TranscriptLog) encodeMessages(msgs []sessions.Message, now time.Time) ([]pending, error) {
	out := make([]pending, len(msgs))
	for i, m := range msgs {
		out[i] = pending{id: t.newID(out[:i]), typ: TypeMessage}
		if i > 0 {
			out[i].parent = out[i-1].id
		}
		body, norm, err := transcript.EncodeMessage(out[i].id, "", m, now)
		if err != nil {
			return nil, err
		}
		f := searchFieldsOfMessage(&norm, body)
		out[i].search = &f
		if transcript.MessageRoundTrips(&norm) {
			out[i].msg = &norm
		}
		if out[i].pre, out[i].post, err = split(body); err != nil {
			return nil, fmt.Errorf("transcript: append: %w", err)
		}
	}
	return out, nil
}

// AppendLazy is Append committed lazily (lazy.go): committed and visible
// when it returns, surviving the death of this process, durable once the
// server's WAL writer or any later synchronous commit flushes it — the
// files backend's AppendLazy (written to the kernel, fsynced by the next
// Append). The runner uses it for a turn's inputs, which the ingress
// journal holds durably and which the turn's reply, a synchronous Append,
// flushes.
func (t *TranscriptLog) AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	return t.appendMessages(ctx, true, nil, nil, msgs)
}

// AppendLazyContext is AppendLazy followed by Context, in one round trip:
// the context is read in the append's transaction, right after it, so it
// is the context as the append left it (or a later one, with appends to the
// session running concurrently in this process). It returns the entry ids
// and that context. A turn uses it for its inputs and tool results, each followed
// by a model call on the context they complete.
func (t *TranscriptLog) AppendLazyContext(ctx context.Context, msgs ...sessions.Message) ([]string, sessions.Context, error) {
	if len(msgs) == 0 {
		c, err := t.Context(ctx)
		return nil, c, err
	}
	r := t.contextRead()
	ids, err := t.appendMessages(ctx, true, r, nil, msgs)
	if err != nil {
		return nil, sessions.Context{}, err
	}
	c, err := t.contextFrom(withOp(ctx, OpContext), r)
	if err != nil {
		return ids, sessions.Context{}, err
	}
	return ids, c, nil
}

// AppendCompaction appends a compaction entry. FirstKeptEntryID must be an
// entry of the current chain ("" keeps nothing before the compaction);
// otherwise the error wraps sessions.ErrNotInChain. The check and the
// append are two statements: the chain only grows at its leaf, so an entry
// on it stays on it.
func (t *TranscriptLog) AppendCompaction(ctx context.Context, c sessions.Compaction) (string, error) {
	if c.FirstKeptEntryID != "" {
		in, err := t.inChain(ctx, c.FirstKeptEntryID)
		if err != nil {
			return "", err
		}
		if !in {
			return "", transcript.ErrFirstKeptNotInChain(c.FirstKeptEntryID)
		}
	}
	ids, err := t.appendChain(ctx, 0, false, nil, nil, func(now time.Time) ([]pending, error) {
		p := pending{id: t.newID(nil), typ: TypeCompaction, kept: c.FirstKeptEntryID}
		body, err := transcript.EncodeCompaction(p.id, "", c, now)
		if err != nil {
			return nil, err
		}
		if p.pre, p.post, err = split(body); err != nil {
			return nil, fmt.Errorf("transcript: compaction: %w", err)
		}
		return []pending{p}, nil
	})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

func (t *TranscriptLog) newID(taken []pending) string {
	for {
		id := transcript.NewEntryID(t.rand())
		dup := false
		for _, p := range taken {
			dup = dup || p.id == id
		}
		if !dup {
			return id
		}
	}
}

// appendChain encodes entries with enc and appends them through the group
// commit, drawing new ids if one collides with an entry of the transcript.
// messages is how many of them are message entries; lazy commits lazily;
// ahead, if set, is a reply stored in the same transaction, built for
// the last entry's id of each try.
func (t *TranscriptLog) appendChain(ctx context.Context, messages int, lazy bool, read *contextRead, ahead *aheadWrite, enc func(now time.Time) ([]pending, error)) ([]string, error) {
	if err := ctx.Err(); err != nil {
		// A cancelled turn writes nothing (the group commit might still
		// take a request whose context already ended).
		return nil, fmt.Errorf("transcript: append %s: %w", t.sessionID, err)
	}
	var fence *sessions.Fence
	if f, ok := sessions.FenceFrom(ctx); ok {
		fence = &f // a turn's append: written only while its lease is held (turns.go)
	}
	for attempt := 1; ; attempt++ {
		now := t.db.clock()
		entries, err := enc(now)
		if err != nil {
			return nil, err
		}
		sql, args, err := t.chainArgs(entries, messages, now, 0)
		if err != nil {
			return nil, err
		}
		if read != nil {
			read.exclude(entries) // this try's ids
		}
		if ahead != nil {
			if err := ahead.prepare(entries[len(entries)-1].id, fence); err != nil {
				t.db.log.Warn("reply not stored with its answer; the turn stores it", zap.String("session_id", t.sessionID), zap.Error(err))
				ahead = nil
			}
		}
		var written []writtenRow
		err = t.db.writes.do(withOp(ctx, OpAppend), &write{op: OpAppend, key: rowKey("t", t.sessionID), sync: !lazy, fill: func(b *pgx.Batch) {
			written = nil // a try's rows only
			if fence != nil {
				queueFence(b, *fence)
			}
			b.Queue(sql, args...).Query(func(rows pgx.Rows) (err error) {
				written, err = scanWritten(rows)
				return err
			})
			if read != nil {
				sql, args := read.statement()
				b.Queue(sql, args...).Query(read.scan)
			}
			if ahead != nil {
				ahead.fill(b)
			}
		}})
		if err != nil && ahead != nil {
			ahead.failed(err)
		}
		if ferr, ok := fenced(err); ok {
			err = ferr
		}
		if err == nil {
			if ahead != nil {
				ahead.committed()
			}
			t.appended(read, entries, written)
			ids := make([]string, len(entries))
			for i, p := range entries {
				ids[i] = p.id
			}
			return ids, nil
		}
		var pe *pgconn.PgError
		if attempt < idAttempts && errors.As(err, &pe) && pe.Code == "23505" && pe.TableName == "transcript_entries" {
			continue // an entry id is taken: draw others
		}
		if ahead != nil && permanent(err) {
			// Refused for what it holds, perhaps the reply's statements:
			// alone, Ready (the turn's, after) would report that without
			// failing the answer. Once more without them. (A fenced
			// append is no longer a PgError here; a lock timeout or an
			// outage is not permanent: it fails the append as before.)
			t.db.log.Warn("append with its reply refused; appending alone, the turn stores the reply", zap.String("session_id", t.sessionID), zap.Error(err))
			ahead = nil
			continue
		}
		return nil, fmt.Errorf("transcript: append %s: %w", t.sessionID, err)
	}
}

// searchColumns is p's search columns, text as the row's words
// (searchWords): computed by its encoder, else from its body; a row left
// to the trigger (role nil) still gets the words of its body.
func (p *pending) searchColumns() searchFields {
	var (
		f    searchFields
		body []byte
	)
	if p.search != nil {
		f = *p.search
	}
	if p.search == nil || f.role == nil {
		// The parent id is not read by the search: its null stands in.
		body = append(append(append([]byte(nil), p.pre...), "null"...), p.post...)
	}
	if p.search == nil {
		f = searchFieldsOf(p.typ, body)
	}
	if f.role == nil {
		f.text = bodySearchWords(p.typ, body)
		return f
	}
	f.text = searchWords(f.text)
	return f
}

// chainArgs returns the statement appending entries (chainSQL, or
// chainOneSQL for one) and its arguments, in a slice with room for extra
// more.
func (t *TranscriptLog) chainArgs(entries []pending, messages int, now time.Time, extra int) (string, []any, error) {
	hdr, err := transcript.EncodeHeader(t.sessionID, t.hdr, now)
	if err != nil {
		return "", nil, err
	}
	n := len(entries)
	if n == 1 {
		p := entries[0]
		f := p.searchColumns()
		return chainOneSQL, append(make([]any, 0, chainArgCount+extra), t.sessionID, n, p.id, messages, t.sessionID, string(hdr),
			p.id, p.parent, p.typ, string(p.pre), string(p.post), p.kept, now, f.role, f.text, f.atMs), nil
	}
	ids, parents, types := make([]string, n), make([]string, n), make([]string, n)
	pres, posts, kept := make([]string, n), make([]string, n), make([]string, n)
	roles, texts, ats := make([]*string, n), make([]*string, n), make([]*int64, n)
	for i, p := range entries {
		ids[i], parents[i], types[i], pres[i], posts[i], kept[i] = p.id, p.parent, p.typ, string(p.pre), string(p.post), p.kept
		f := p.searchColumns()
		roles[i], texts[i], ats[i] = f.role, f.text, f.atMs
	}
	return chainSQL, append(make([]any, 0, chainArgCount+extra), t.sessionID, n, ids[n-1], messages, t.sessionID, string(hdr),
		ids, parents, types, pres, posts, kept, now, roles, texts, ats), nil
}
