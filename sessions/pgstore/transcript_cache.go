package pgstore

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// chainCacheSize bounds how many parsed chains a DB keeps (the files
// backend keeps as many open transcripts).
const chainCacheSize = 256

// chainCache keeps the parsed chains of the transcripts whose context was
// rebuilt lately, so that the next rebuild decodes only the entries
// appended since: a turn no longer parses its whole session again. It is a
// cache of what the database holds, never a source: every Context still
// asks the database for the entries past the cached ones (so appends by
// other replicas count at once) and drops the cached chain when the
// transcript was cut or removed since.
//
// A cut is noticed by the entry the chain ends at, which the statement
// reading the entries past it (sinceSQL) reads too, as the first of its
// range: it must still be at its seq with its id. Seqs alone do not tell:
// a transcript cut and grown back to or past the cached seq (an import
// restoring an older copy, then appends; an operator's delete) has a head
// as high, but other entries, which the chain must not be mixed with. Entry ids are drawn at random
// (32 bits: an entry appended after a cut takes the old one's id at its
// seq once in 4 billion) and the rows of a transcript are only appended,
// or removed all together (an import replaces them all, maintenance
// deletes them all; nothing updates one), so the same id at the same seq
// is the same entry with the same entries before it: an import of an
// older copy of the transcript brings back its ids at their seqs, after
// the same entries. The check is of the rows themselves, not of a
// generation every deleting path would have to bump: it holds whoever cut
// them (an older binary, another replica, an operator with psql). Only the
// session header's id (the session id) comes back with another entry
// after a cut, and a chain ending at the header holds nothing
// (transcript.Chain ignores headers).
//
// mu guards ll and m; each cachedChain has its own lock, held only while
// its chain is read or extended (never across a query).
type chainCache struct {
	mu sync.Mutex
	ll *list.List               // most recently used first; values are *cachedChain
	m  map[string]*list.Element // by session id
}

// cachedChain is one transcript's chain: the entries read so far, up to
// seq last, whose entry is lastID.
type cachedChain struct {
	id     string
	mu     sync.Mutex
	chain  *transcript.Chain
	last   int64
	lastID string
}

func (c *chainCache) get(id string) *cachedChain {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cachedChain)
}

func (c *chainCache) put(cc *cachedChain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.ll, c.m = list.New(), map[string]*list.Element{}
	}
	if el, ok := c.m[cc.id]; ok {
		el.Value = cc
		c.ll.MoveToFront(el)
		return
	}
	c.m[cc.id] = c.ll.PushFront(cc)
	for c.ll.Len() > chainCacheSize {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*cachedChain).id)
	}
}

func (c *chainCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		c.ll.Remove(el)
		delete(c.m, id)
	}
}

// sinceSQL reads the head's last seq and the entries from $2 on: the one
// at $2 (the cached chain's last, without its body: one more row of the
// same range of the primary key) tells that the transcript was not cut
// since, those after it extend the chain. No row means no head (an empty
// or removed transcript).
const sinceSQL = `SELECT h.last_seq, e.seq, e.id, COALESCE(e.parent_id, ''), e.type,
	CASE WHEN e.seq > $2 THEN e.body::text END, e.created_at
FROM transcript_heads h LEFT JOIN transcript_entries e ON e.session_id = h.session_id AND e.seq >= $2
WHERE h.session_id = $1 ORDER BY e.seq`

// sinceOthersSQL is sinceSQL without the entries whose ids are $3: those
// the transaction it runs in appended (AppendLazyContext), which the
// appender adds decoded.
var sinceOthersSQL = strings.Replace(sinceSQL, "e.seq >= $2", "e.seq >= $2 AND e.id <> ALL ($3::text[])", 1)

// contextRead is the read a Context needs: with a cached chain, the
// transcript's head and the entries past the chain (sinceSQL); without
// one, the tail from the latest compaction (loadTailSQL). It is one
// statement, run alone (query) or queued after an append in the same
// batch (queue, scan: AppendLazyContext).
type contextRead struct {
	sessionID string
	cc        *cachedChain // nil: read the tail
	after     int64        // cc's last seq when the read was planned
	afterID   string       // the entry at after, which must still be there

	head    int64             // sinceSQL: the head's last seq (0: none)
	entries []TranscriptEntry // sinceSQL: the entries after after
	tail    Tail              // loadTailSQL
	// found says sinceSQL found the entry at after still afterID: the
	// transcript was not cut since the chain was read (else its entries
	// are of no use to the chain).
	found bool

	// With AppendLazyContext, set per try of its append: the ids it
	// appends, which sinceOthersSQL leaves out (nil: sinceSQL); then, once
	// committed, those entries decoded (own, in seq order) and whether
	// they could be (ownOK).
	except []string
	own    []appendedEntry
	ownOK  bool
}

// exclude makes the read leave out entries, which the append it follows
// writes in the same transaction: a cached chain's read only, and only
// when every entry can be added decoded (else the read returns them).
func (r *contextRead) exclude(entries []pending) {
	r.except, r.own, r.ownOK = nil, nil, false
	if r.cc == nil {
		return
	}
	for _, p := range entries {
		if p.msg == nil {
			return
		}
	}
	r.except = make([]string, len(entries))
	for i, p := range entries {
		r.except[i] = p.id
	}
}

// contextRead plans the read of t's next Context.
func (t *TranscriptLog) contextRead() *contextRead {
	r := &contextRead{sessionID: t.sessionID, cc: t.db.chains.get(t.sessionID)}
	if r.cc != nil {
		r.cc.mu.Lock()
		r.after, r.afterID = r.cc.last, r.cc.lastID
		r.cc.mu.Unlock()
	}
	return r
}

// statement is the read's SQL and arguments.
func (r *contextRead) statement() (string, []any) {
	if r.except != nil { // set only with a cached chain (exclude)
		return sinceOthersSQL, []any{r.sessionID, r.after, r.except}
	}
	if r.cc != nil {
		return sinceSQL, []any{r.sessionID, r.after}
	}
	return loadTailSQL, []any{r.sessionID}
}

// query runs the read alone.
func (r *contextRead) query(ctx context.Context, db *DB) error {
	sql, args := r.statement()
	rows, err := db.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	return r.scan(rows)
}

// scan reads the read's rows (closing them), replacing what an earlier
// try read.
func (r *contextRead) scan(rows pgx.Rows) error {
	if r.cc != nil {
		var err error
		if r.head, r.entries, err = scanSince(rows); err != nil {
			return err
		}
		r.found = len(r.entries) > 0 && r.entries[0].Seq == r.after && r.entries[0].ID == r.afterID
		if r.found {
			r.entries = r.entries[1:]
		}
		return nil
	}
	entries, err := pgx.CollectRows(rows, scanTranscriptEntry)
	if err != nil {
		return err
	}
	r.tail = Tail{Entries: entries, Compaction: -1}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == TypeCompaction {
			r.tail.Compaction = i
			break
		}
	}
	return nil
}

// extendCached rebuilds the context from the cached chain extended by
// the entries r read past it and those its append wrote, in seq order; ok
// is false when the cache is of no use (the transcript was cut or
// removed, the chain needs older entries, or the entries appended could
// not be added decoded).
func (t *TranscriptLog) extendCached(r *contextRead) (out sessions.Context, ok bool, err error) {
	cc := r.cc
	if r.except != nil && !r.ownOK { // the read left out entries not at hand
		return sessions.Context{}, false, nil
	}
	if r.head < r.after || !r.found { // cut (and maybe grown back), removed: start over
		t.db.chains.drop(t.sessionID)
		return sessions.Context{}, false, nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	own := r.own
	for _, e := range r.entries {
		for len(own) > 0 && own[0].seq < e.Seq {
			if own[0].seq > cc.last {
				cc.addAppended(own[0])
			}
			own = own[1:]
		}
		if e.Seq <= cc.last {
			continue // a concurrent Context added it already
		}
		if err := cc.chain.Add(e.Body, e.Seq); err != nil {
			t.db.chains.drop(t.sessionID)
			return sessions.Context{}, false, fmt.Errorf("transcript: context %s: %w", t.sessionID, err)
		}
		cc.last, cc.lastID = e.Seq, e.ID
	}
	for _, e := range own {
		if e.seq > cc.last {
			cc.addAppended(e)
		}
	}
	out, ok = cc.chain.Context()
	if !ok { // the chain now needs entries older than those cached
		t.db.chains.drop(t.sessionID)
	}
	return out, ok, nil
}

// scanSince reads sinceSQL's rows: the head's last seq (0 when there is
// no head) and the entries from the seq asked for (the first without its
// body).
func scanSince(rows pgx.Rows) (head int64, entries []TranscriptEntry, err error) {
	defer rows.Close()
	// Value types, not pointers: pgx allocates nothing for their NULLs
	// and plans (issue 21); each row sets them all.
	var r struct {
		seq             pgtype.Int8
		id, parent, typ pgtype.Text
		body            pgtype.Text
		at              pgtype.Timestamptz
	}
	for rows.Next() {
		if err := rows.Scan(&head, &r.seq, &r.id, &r.parent, &r.typ, &r.body, &r.at); err != nil {
			return 0, nil, err
		}
		if !r.seq.Valid {
			continue // the head alone: no entry from the seq asked for
		}
		e := TranscriptEntry{Seq: r.seq.Int64, ID: r.id.String, ParentID: r.parent.String, Type: r.typ.String, CreatedAt: r.at.Time.UTC()}
		if r.body.Valid {
			e.Body = json.RawMessage(r.body.String)
		}
		entries = append(entries, e)
	}
	return head, entries, rows.Err()
}

// keepChain caches c, built from entries (in seq order), for the next
// Context of the transcript.
func (t *TranscriptLog) keepChain(c *transcript.Chain, entries []TranscriptEntry) {
	if len(entries) == 0 {
		return
	}
	last := entries[len(entries)-1]
	t.db.chains.put(&cachedChain{id: t.sessionID, chain: c, last: last.Seq, lastID: last.ID})
}
