package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// A new session's first inputs go with its creation (issue 21): a new
// chat, or a key whose entry was deleted, cost Begin's insert and then
// the turn's append, two round trips; when the
// turn's inputs hold for a created session too (sessions.InputsAhead's
// Created: nothing inherited from a parent), the insert, the transcript's
// header and the inputs commit together, with the context read after them,
// in one. The insert is the create path's (ON CONFLICT DO NOTHING): a key
// another process created meanwhile inserts nothing and appends nothing.

// createEntrySQL is insertEntry returning the row it inserted, none when
// the key has one.
const createEntrySQL = insertEntry + ` ON CONFLICT (agent_id, session_key) DO NOTHING RETURNING ` + entryColumns

var chainCreate = gate(createEntrySQL, false)

// createAhead creates e's row with in's inputs appended to its new
// transcript and the context read after them, in one synchronous write
// (create's). created reports that the row was inserted (then in.Take was
// called), count is the agent's entries after it when a cap is set (-1
// otherwise). An error with refused wrote nothing; other errors leave the
// outcome unknown.
func (x *Index) createAhead(ctx context.Context, e *sessions.Entry, in *sessions.InputsAhead, now time.Time) (created bool, count int, refused bool, err error) {
	w, err := x.newInputsWrite(e.SessionKey, e.SessionID, in, now)
	if err != nil {
		return false, -1, true, err
	}
	w.sql = chainCreate.of(w.sql)
	w.args = append(w.args, entryArgs(x.agentID, e)...)
	count = -1
	if x.capLimit() > 0 {
		w.after = func(b *pgx.Batch) {
			b.Queue(countEntriesSQL, x.agentID).QueryRow(func(row pgx.Row) error { return row.Scan(&count) })
		}
	}
	_, created, refused, err = x.writeInputs(ctx, e.SessionKey, w, in, true)
	return created, count, refused, err
}

// createWith is create, with the turn's inputs when ctx carries some that
// hold for a created session (createAhead); a write of those the server
// refused is logged and the row created alone.
func (x *Index) createWith(ctx context.Context, e *sessions.Entry, o sessions.Origin, now time.Time) (created bool, count int, err error) {
	if in := sessions.InputsAheadFrom(ctx); in != nil && in.Created && len(in.Msgs) > 0 && !o.Internal {
		created, count, refused, err := x.createAhead(ctx, e, in, now)
		if err == nil || !refused {
			return created, count, err
		}
		x.db.log.Debug("inputs not appended with the creation; the turn appends them", zap.Error(err))
	}
	return x.create(ctx, e)
}
