package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// RenameKey moves the session of from to to (sessions.Index.RenameKey) in
// one transaction: the entry row takes the new key (updatedAt moves), and
// so do from's archived sessions. Transcript rows belong to the session id
// and stay as they are. Both rows are locked in key order, so two moves
// over the same keys never deadlock; a session that to gets meanwhile (a
// Begin's insert racing the move) makes the move fail with
// sessions.ErrKeyTaken, changing nothing.
func (x *Index) RenameKey(ctx context.Context, from, to routing.Key) (sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	fk, err := x.keyString(from)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: rename key: %w", err)
	}
	tk, err := x.keyString(to)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: rename key: %w", err)
	}
	if fk == tk {
		return sessions.Entry{}, fmt.Errorf("pgstore: rename key: %s to itself", sessions.Clip(fk))
	}
	now := x.db.clock()
	var e sessions.Entry
	err = pgx.BeginFunc(ctx, x.db.pool, func(tx pgx.Tx) error {
		first, second := fk, tk
		if second < first {
			first, second = second, first
		}
		rows := map[string]sessions.Entry{}
		for _, k := range []string{first, second} {
			cur, ok, err := x.get(ctx, tx, k, true)
			if err != nil {
				return err
			}
			if ok {
				rows[k] = cur
			}
		}
		cur, ok := rows[fk]
		dst, taken := rows[tk]
		if !ok && !taken && first == tk {
			// to was read before from's lock was granted: a move of
			// from committed while this one waited is seen only by a
			// new statement (READ COMMITTED).
			var err error
			if dst, taken, err = x.get(ctx, tx, tk, true); err != nil {
				return err
			}
		}
		switch {
		case !ok && taken:
			e = dst
			return nil
		case !ok:
			return fmt.Errorf("%w: neither %s nor %s has a session", sessions.ErrNotFound, fk, tk)
		case taken:
			return fmt.Errorf("%w: %s has session %s, %s has %s", sessions.ErrKeyTaken, tk, dst.SessionID, fk, cur.SessionID)
		}
		moved, err := scanEntry(tx.QueryRow(ctx, `UPDATE entries SET session_key = $3, updated_at = $4
			WHERE agent_id = $1 AND session_key = $2 RETURNING `+entryColumns, x.agentID, fk, tk, now))
		if err != nil {
			return fmt.Errorf("move entry: %w", keyTaken(err, tk))
		}
		if _, err := tx.Exec(ctx, `UPDATE archived SET session_key = $3 WHERE agent_id = $1 AND session_key = $2`,
			x.agentID, fk, tk); err != nil {
			return fmt.Errorf("move archived sessions: %w", err)
		}
		e = moved
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: rename key: %w", err)
	}
	return e, nil
}

// keyTaken reports a unique violation of the entries' key as
// sessions.ErrKeyTaken.
func keyTaken(err error, k string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %s (created meanwhile)", sessions.ErrKeyTaken, k)
	}
	return err
}
