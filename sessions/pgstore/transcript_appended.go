package pgstore

import (
	"cmp"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

// What an append wrote goes into the session's cached chain
// (transcript_cache.go) as the appender holds it, decoded, instead of
// being read back and parsed by the next Context (issue 21): chainSQL
// returns each row's seq and parent (the first entry's parent is the
// leaf the statement found under the head's lock), and the message is the
// one EncodeMessage normalised, which equals what parsing the row's body
// gives (transcript.Chain.AddMessage). A turn's reply (Append) goes in
// after its commit when the cached chain ends right before it, at the
// entry it continues (the transcript was not cut and grown back to the
// cached seq meanwhile: transcript_cache.go); a turn's inputs
// (AppendLazyContext) go in with the rows its read returns, which leave
// out the entries the same transaction appended.

// writtenRow is one row chainSQL inserted.
type writtenRow struct {
	seq        int64
	id, parent string
}

// scanWritten reads chainSQL's rows (closing them).
func scanWritten(rows pgx.Rows) ([]writtenRow, error) {
	defer rows.Close()
	var out []writtenRow
	for rows.Next() {
		var w writtenRow
		if err := rows.Scan(&w.seq, &w.id, &w.parent); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// appendedEntry is an entry this process appended, as its row holds it.
type appendedEntry struct {
	seq        int64
	id, parent string
	msg        *sessions.Message // the normalised message
}

// appended takes note of what a committed append wrote: with read (the
// read AppendLazyContext queued after it), for the chain that read
// extends; without, into the cached chain.
func (t *TranscriptLog) appended(read *contextRead, entries []pending, written []writtenRow) {
	own, ok := t.appendedEntries(entries, written)
	if read != nil {
		read.own, read.ownOK = own, ok
		return
	}
	if ok {
		t.cacheAppended(own)
	}
}

// appendedEntries pairs the rows written with the entries encoded, in seq
// order. ok is false when there is nothing to add decoded: an entry is not
// a message, the rows do not match the entries, or the session header was
// written — the transcript was empty, so a chain cached for it before is
// of a transcript removed since, and is dropped.
func (t *TranscriptLog) appendedEntries(entries []pending, written []writtenRow) (own []appendedEntry, ok bool) {
	for _, w := range written {
		if w.id == t.sessionID {
			t.db.chains.drop(t.sessionID)
			return nil, false
		}
	}
	if len(written) != len(entries) {
		return nil, false
	}
	slices.SortFunc(written, func(a, b writtenRow) int { return cmp.Compare(a.seq, b.seq) })
	own = make([]appendedEntry, len(entries))
	for i, p := range entries {
		w := written[i]
		if p.msg == nil || w.id != p.id || (i > 0 && w.seq != own[i-1].seq+1) {
			return nil, false
		}
		own[i] = appendedEntry{seq: w.seq, id: w.id, parent: w.parent, msg: p.msg}
	}
	return own, true
}

// cacheAppended adds own (in seq order) to the session's cached chain when
// that chain ends right before them, at the entry the first continues;
// otherwise the next Context reads what lies between. The first one's
// parent is the head's leaf the append found under the head's lock: the
// entry at the seq before. One other than the chain's last means the
// transcript was cut and grown back to that seq since the chain was read;
// added anyway, the appended entry would become the chain's last, the one
// the next read checks, and the cut would go unnoticed.
func (t *TranscriptLog) cacheAppended(own []appendedEntry) {
	cc := t.db.chains.get(t.sessionID)
	if cc == nil || len(own) == 0 {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.last != own[0].seq-1 || cc.lastID != own[0].parent {
		return
	}
	for _, e := range own {
		cc.addAppended(e)
	}
}

// addAppended adds e, the entry at seq cc.last+1, to cc. The caller holds
// cc.mu.
func (cc *cachedChain) addAppended(e appendedEntry) {
	cc.chain.AddMessage(e.id, e.parent, *e.msg, e.seq)
	cc.last, cc.lastID = e.seq, e.id
}
