package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// maxCreateRaces bounds how often a transaction retries after losing the
// race to create a key; each retry finds the winner's row, so two are plenty.
const maxCreateRaces = 3

func (x *Index) resetConfig() sessions.ResetConfig {
	if x.reset == nil {
		return sessions.ResetConfig{}
	}
	return x.reset()
}

// Begin returns the session an inbound message belongs to, as
// filestore.Store.Begin does: it creates the entry on the first message,
// rolls it over (archiving the old session id) when the reset policy says
// it is stale, moves lastInteractionAt unless o.Internal, and records the
// origin. Two callers beginning a new key at once get the same entry.
func (x *Index) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	return x.begin(ctx, key, o, nil)
}

// begin is Begin writing counters (taken from the counter writer) in the
// transaction of its first statement, before the touch. It remembers the
// session it returns for the key (begin_inputs.go).
func (x *Index) begin(ctx context.Context, key routing.Key, o sessions.Origin, counters []counterReq) (sessions.Entry, sessions.BeginInfo, error) {
	e, info, err := x.beginSession(ctx, key, o, counters)
	if err == nil {
		x.db.heads.set(x.agentID, e.SessionKey, e.SessionID)
	}
	return e, info, err
}

func (x *Index) beginSession(ctx context.Context, key routing.Key, o sessions.Origin, counters []counterReq) (sessions.Entry, sessions.BeginInfo, error) {
	ctx = withOp(ctx, OpBegin)
	k, err := x.keyString(key)
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
	}
	now := x.db.clock()
	if o.At.IsZero() {
		o.At = now
	}
	o.At = o.At.UTC().Truncate(time.Microsecond)
	o = o.Clean() // touchSQL takes its fields as they are
	cfg, judged := x.resetConfig(), o.JudgedAt(now)

	// Fastest path: for a key whose policy does not depend on its entry,
	// one UPDATE touches the session if its own clocks prove it fresh
	// (sessions.FreshBounds), all in one lazy commit.
	if started, last, ok := sessions.FreshBounds(cfg, key, judged); ok {
		// The turn's inputs, handed over, go with the touch, or with the
		// creation (begin_inputs.go, begin_create.go).
		none := false // beginAhead's touch found nothing fresh under the key
		if in := sessions.InputsAheadFrom(ctx); in != nil && len(in.Msgs) > 0 && !o.Internal {
			e, done, n, err := x.beginAhead(ctx, k, o, now, started, last, &counters, in)
			if err != nil {
				return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
			}
			if done {
				return e, sessions.BeginInfo{}, nil
			}
			none = n
		}
		if !none {
			e, ok, err := x.touchLazy(ctx, touchFreshSQL, []any{started, last}, k, "", o, now, counters)
			counters = nil
			if err != nil {
				return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
			}
			if ok {
				return e, sessions.BeginInfo{}, nil
			}
		}
		// Not fresh, or new: a new key is created by one insert (it
		// waits for its WAL flush); an existing one takes the paths below.
		e := sessions.NewEntry(key, o, now)
		created, count, err := x.createWith(ctx, &e, o, now)
		if err != nil {
			return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
		}
		if created {
			if !x.underCap(count) {
				x.capAfter(ctx, k)
			}
			return e, sessions.BeginInfo{Created: true}, nil
		}
	}
	if len(counters) > 0 {
		// Not carried by a touch: written first, as a settled read sees them.
		x.db.counters.write(counters)
	}
	// Fast path: a fresh session is touched by one conditional UPDATE. It
	// applies only if the session id is still the one judged fresh.
	cur, ok, err := x.get(ctx, x.db.pool, k, false)
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
	}
	if ok {
		if stale, _ := sessions.Evaluate(cfg, key, cur, judged); !stale {
			// The inputs handed over go with the touch, to the session
			// just read (begin_inputs.go): zero bounds are no condition.
			if in := sessions.InputsAheadFrom(ctx); in != nil && len(in.Msgs) > 0 && !o.Internal {
				e, touched, refused, err := x.touchAhead(ctx, k, cur.SessionID, o, now, time.Time{}, time.Time{}, nil, in)
				switch {
				case err == nil && touched:
					return e, sessions.BeginInfo{}, nil
				case err != nil && !refused:
					return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
				}
			}
			e, ok, err := x.touchLazy(ctx, touchSQL, nil, k, cur.SessionID, o, now, nil)
			if err != nil {
				return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
			}
			if ok {
				return e, sessions.BeginInfo{}, nil
			}
		}
	}

	var (
		e    sessions.Entry
		info sessions.BeginInfo
	)
	err = x.locked(ctx, k, func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error) {
		info = sessions.BeginInfo{}
		if !ok {
			e = sessions.NewEntry(key, o, now)
			info.Created = true
			return x.insert(ctx, tx, &e)
		}
		expired, reason := sessions.Expiry(cfg, key, cur, judged)
		if expired.IsZero() { // another caller got here first
			var err error
			e, _, err = x.touch(ctx, tx, k, cur.SessionID, o, now)
			return true, err
		}
		if err := x.archive(ctx, tx, k, cur, reason, false, now); err != nil {
			return false, err
		}
		e = sessions.RolledOver(cur, false, "", now)
		e.LastInteractionAt = sessions.StartInteraction(o, now)
		sessions.ApplyOrigin(&e, o)
		info = sessions.BeginInfo{ResetReason: reason, Previous: cur.SessionID, ExpiredAt: expired}
		return true, x.update(ctx, tx, &e)
	})
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("pgstore: begin: %w", err)
	}
	if info.Created {
		x.capAfter(ctx, k)
	}
	return e, info, nil
}

// touchSQL records an inbound message on a fresh session in one statement:
// sessions.ApplyOrigin's rules written in SQL, so concurrent touches never lose one
// another's fields. $4 is NULL for internal work (lastInteractionAt stays).
const touchSQL = `UPDATE entries SET ` + touchSet + `
	WHERE agent_id = $1 AND session_key = $2 AND session_id = $3
	RETURNING ` + entryColumns

// touchFreshSQL is touchSQL for whatever session key has, if its clocks
// are within sessions.FreshBounds ($15, $16; $3 is ignored): the row lock
// the UPDATE takes makes the check and the write one step, so a session
// rolled over meanwhile is judged on its new clocks.
const touchFreshSQL = `UPDATE entries SET ` + touchSet + `
	WHERE agent_id = $1 AND session_key = $2 AND $3::text IS NOT NULL
	AND session_started_at >= $15::timestamptz AND last_interaction_at >= $16::timestamptz
	RETURNING ` + entryColumns

const touchSet = `
	last_interaction_at = GREATEST(last_interaction_at, $4::timestamptz),
	updated_at = GREATEST(updated_at, $5::timestamptz),
	last_channel = CASE WHEN $6::text <> '' THEN $6 ELSE last_channel END,
	last_thread_id = CASE WHEN $6::text <> '' THEN $7::text ELSE last_thread_id END,
	channel = CASE WHEN channel = '' THEN $6 ELSE channel END,
	chat_type = CASE WHEN chat_type = '' THEN $8::text ELSE chat_type END,
	last_to = COALESCE(NULLIF($9::text, ''), last_to),
	last_account_id = COALESCE(NULLIF($10::text, ''), last_account_id),
	last_from = COALESCE(NULLIF($11::text, ''), last_from),
	display_name = COALESCE(NULLIF($12::text, ''), display_name),
	parent_session_key = CASE WHEN parent_session_key = '' THEN $13::text ELSE parent_session_key END,
	title = CASE WHEN title = '' THEN $14::text ELSE title END`

func (x *Index) touch(ctx context.Context, q queryer, k, sessionID string, o sessions.Origin, now time.Time) (sessions.Entry, bool, error) {
	e, err := scanEntry(q.QueryRow(ctx, touchSQL, x.touchArgs(k, sessionID, o, now)...))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Entry{}, false, nil
	}
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("touch: %w", err)
	}
	return e, true, nil
}

// touchLazy runs sql (touchSQL, or touchFreshSQL with its bounds in
// extra) in a lazy commit (lazy.go): what it writes is
// routine (lastInteractionAt, the origin fields), what the files backend
// coalesces with its counters; creating and rolling a session over stay
// synchronous (Begin's locked path).
func (x *Index) touchLazy(ctx context.Context, sql string, extra []any, k, sessionID string, o sessions.Origin, now time.Time,
	counters []counterReq) (sessions.Entry, bool, error) {
	var (
		e    sessions.Entry
		none bool
	)
	merged := merge(counters)
	together := sql == touchFreshSQL && len(merged) == 1 && merged[0].agentID == x.agentID && merged[0].key == k
	err := x.db.writes.do(ctx, &write{op: opOf(ctx), key: rowKey("e", x.agentID, k), fill: func(b *pgx.Batch) {
		none = false
		args := append(x.appendTouchArgs(make([]any, 0, touchArgCount+len(extra)), k, sessionID, o, now), extra...)
		if together { // one UPDATE (index_touch_counters.go)
			queueTouchCounters(b, args, merged[0], &e, &none)
			return
		}
		x.db.counters.queueBatch(b, counters)
		b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
			var err error
			e, err = scanEntry(row)
			return noRows(err, &none)
		})
	}})
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("touch: %w", err)
	}
	return e, !none, nil
}

func (x *Index) touchArgs(k, sessionID string, o sessions.Origin, now time.Time) []any {
	return x.appendTouchArgs(make([]any, 0, touchArgCount), k, sessionID, o, now) // (room for touchAheadSQL's two more)
}

// appendTouchArgs appends touchArgs's arguments to args.
func (x *Index) appendTouchArgs(args []any, k, sessionID string, o sessions.Origin, now time.Time) []any {
	var last any // NULL for an internal origin
	if !o.Internal {
		last = o.At
	}
	return append(args, x.agentID, k, sessionID, last, now,
		o.Channel, o.ThreadID, o.ChatType, o.To, o.AccountID, o.From, o.Name, o.ParentKey, sessions.MakeTitle(o.Title))
}

// locked runs fn in a transaction holding the row lock of key k (or, for
// a key without a row, with ok false). fn returns false when it lost the
// race to create the row; it is then run again on the winner's row.
func (x *Index) locked(ctx context.Context, k string, fn func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error)) error {
	return pgx.BeginFunc(ctx, x.db.pool, func(tx pgx.Tx) error {
		for range maxCreateRaces {
			cur, ok, err := x.get(ctx, tx, k, true)
			if err != nil {
				return err
			}
			done, err := fn(tx, cur, ok)
			if err != nil || done {
				return err
			}
		}
		return fmt.Errorf("%s: lost the race to create it %d times", k, maxCreateRaces)
	})
}

// create inserts e's row outside a transaction of the caller's (through
// the group commit, waiting for its WAL flush); false means the key exists.
// When creations are capped (maintenance_cap.go) the same transaction
// counts the agent's entries after the insert: count is that number, or
// -1 when not counted.
func (x *Index) create(ctx context.Context, e *sessions.Entry) (created bool, count int, err error) {
	var n int64
	counted := x.capLimit() > 0
	err = x.db.writes.do(ctx, &write{op: opOf(ctx), key: rowKey("e", x.agentID, e.SessionKey), sync: true, fill: func(b *pgx.Batch) {
		n, count = 0, -1
		b.Queue(insertEntry+` ON CONFLICT (agent_id, session_key) DO NOTHING`, entryArgs(x.agentID, e)...).
			Exec(func(t pgconn.CommandTag) error {
				n = t.RowsAffected()
				return nil
			})
		if counted {
			b.Queue(countEntriesSQL, x.agentID).QueryRow(func(row pgx.Row) error { return row.Scan(&count) })
		}
	}})
	if err != nil {
		return false, -1, fmt.Errorf("create: %w", err)
	}
	return n == 1, count, nil
}

// insert creates e's row; false means another transaction created the key
// first (ON CONFLICT waits for it, so the retry sees its committed row).
func (x *Index) insert(ctx context.Context, tx pgx.Tx, e *sessions.Entry) (bool, error) {
	tag, err := tx.Exec(ctx, insertEntry+` ON CONFLICT (agent_id, session_key) DO NOTHING`, entryArgs(x.agentID, e)...)
	if err != nil {
		return false, fmt.Errorf("insert: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (x *Index) update(ctx context.Context, tx pgx.Tx, e *sessions.Entry) error {
	tag, err := tx.Exec(ctx, updateEntry, entryArgs(x.agentID, e)...)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("update: %w: %s", sessions.ErrNotFound, e.SessionKey)
	}
	return nil
}

// archive records e, the current session of k, in the archived table.
func (x *Index) archive(ctx context.Context, tx pgx.Tx, k string, e sessions.Entry, reason string, deleted bool, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, title,
		session_started_at, updated_at, message_count, total_tokens, deleted)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		x.agentID, k, e.SessionID, reason, now, e.Title, e.SessionStartedAt, e.UpdatedAt, e.MessageCount, e.TotalTokens, deleted)
	if err != nil {
		return fmt.Errorf("archive %s: %w", e.SessionID, err)
	}
	if x.db.afterArchive != nil {
		x.db.afterArchive(ctx, tx)
	}
	return nil
}
