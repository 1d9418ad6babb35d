package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Reset starts a new session id for key and archives the old one, in one
// transaction: either both happen or neither does. A key without a session
// gets a new one. Reasons and kept fields are filestore.Store.Reset's.
func (x *Index) Reset(ctx context.Context, key routing.Key, o sessions.ResetOptions) (sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: reset: %w", err)
	}
	reason := o.Reason
	if reason == "" {
		reason = "reset"
		if o.Manual {
			reason = "manual"
		}
	}
	now := x.db.clock()
	var (
		e       sessions.Entry
		created bool
	)
	err = x.locked(ctx, k, func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error) {
		created = !ok
		if !ok {
			e = sessions.NewEntry(key, sessions.Origin{At: now}, now)
			e.ModelOverride = o.Model
			return x.insert(ctx, tx, &e)
		}
		if err := x.archive(ctx, tx, k, cur, reason, false, now); err != nil {
			return false, err
		}
		e = sessions.RolledOver(cur, o.Manual, o.Model, now)
		return true, x.update(ctx, tx, &e)
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: reset: %w", err)
	}
	if created {
		x.capAfter(ctx, k)
	}
	return e, nil
}

// Patch changes an entry in one transaction holding its row lock. fn gets
// a copy and must be quick (it runs inside the transaction) and must not
// call the DB. The key and session id cannot change; updatedAt moves,
// lastInteractionAt does not.
func (x *Index) Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: patch: %w", err)
	}
	now := x.db.clock()
	var e sessions.Entry
	err = x.locked(ctx, k, func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error) {
		if !ok {
			return false, fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		c := cur
		if err := fn(&c); err != nil {
			return false, err
		}
		c.SessionKey, c.SessionID = cur.SessionKey, cur.SessionID
		c.UpdatedAt = now
		e = c
		return true, x.update(ctx, tx, &c)
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: patch: %w", err)
	}
	return e, nil
}

// Delete archives the session of key (reason "deleted") and removes its
// entry, in one transaction. Its transcript rows stay, reachable from the
// archive (Switch brings the session back).
func (x *Index) Delete(ctx context.Context, key routing.Key) error {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return fmt.Errorf("pgstore: delete: %w", err)
	}
	now := x.db.clock()
	err = x.locked(ctx, k, func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error) {
		if !ok {
			return false, fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		if err := x.archive(ctx, tx, k, cur, "deleted", true, now); err != nil {
			return false, err
		}
		_, err := tx.Exec(ctx, `DELETE FROM entries WHERE agent_id = $1 AND session_key = $2`, x.agentID, k)
		return true, err
	})
	if err != nil {
		return fmt.Errorf("pgstore: delete: %w", err)
	}
	return nil
}

// DeleteArchived marks the archived session sessionID of key deleted
// (reason "deleted"); only the sessions Archived lists qualify, as for
// Switch.
func (x *Index) DeleteArchived(ctx context.Context, key routing.Key, sessionID string) error {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return fmt.Errorf("pgstore: delete archived: %w", err)
	}
	if !isSessionID(sessionID) {
		return fmt.Errorf("pgstore: delete archived: %w: %s has no archived session %q", sessions.ErrNotFound, k, clip(sessionID))
	}
	tag, err := x.db.pool.Exec(ctx, `UPDATE archived SET deleted = true, reason = 'deleted'
		WHERE session_id = $3 AND id IN (SELECT id FROM archived WHERE agent_id = $1 AND session_key = $2
			ORDER BY archived_at DESC, id DESC LIMIT $4)`,
		x.agentID, k, sessionID, sessions.MaxArchivedPerKey)
	if err != nil {
		return fmt.Errorf("pgstore: delete archived: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: delete archived: %w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
	}
	return nil
}

// Switch makes the archived session sessionID of key current again; the
// current session (if any) is archived in its place (reason "switch").
func (x *Index) Switch(ctx context.Context, key routing.Key, sessionID string) (sessions.Entry, error) {
	ctx = withOp(ctx, OpIndex)
	k, err := x.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: switch: %w", err)
	}
	if !isSessionID(sessionID) {
		return sessions.Entry{}, fmt.Errorf("pgstore: switch: %w: %s has no archived session %q", sessions.ErrNotFound, k, clip(sessionID))
	}
	now := x.db.clock()
	var (
		e       sessions.Entry
		created bool
	)
	err = x.locked(ctx, k, func(tx pgx.Tx, cur sessions.Entry, ok bool) (bool, error) {
		created = false
		if ok && cur.SessionID == sessionID {
			e = cur
			return true, nil
		}
		var (
			rec   sessions.Archived
			recID int64
		)
		// Only the sessions Archived lists (the newest MaxArchivedPerKey)
		// can be switched to, as in the files backend, which forgets older ones.
		err := tx.QueryRow(ctx, `SELECT id, title, message_count, total_tokens FROM archived
			WHERE session_id = $3 AND id IN (SELECT id FROM archived WHERE agent_id = $1 AND session_key = $2
				ORDER BY archived_at DESC, id DESC LIMIT $4)
			ORDER BY id DESC LIMIT 1 FOR UPDATE`,
			x.agentID, k, sessionID, sessions.MaxArchivedPerKey).Scan(&recID, &rec.Title, &rec.MessageCount, &rec.TotalTokens)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("%w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
		}
		if err != nil {
			return false, err
		}
		if ok {
			e = sessions.RolledOver(cur, true, "", now)
		} else {
			e = sessions.NewEntry(key, sessions.Origin{At: now}, now)
		}
		e.SessionID, e.Title, e.MessageCount, e.TotalTokens = sessionID, rec.Title, rec.MessageCount, rec.TotalTokens
		if ok {
			if err := x.archive(ctx, tx, k, cur, "switch", false, now); err != nil {
				return false, err
			}
			if err := x.update(ctx, tx, &e); err != nil {
				return false, err
			}
		} else if ins, err := x.insert(ctx, tx, &e); err != nil || !ins {
			// Another caller created the key meanwhile: run again on its row.
			return false, err
		}
		created = !ok
		_, err = tx.Exec(ctx, `DELETE FROM archived WHERE id = $1`, recID)
		return true, err
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("pgstore: switch: %w", err)
	}
	if created {
		x.capAfter(ctx, k)
	}
	return e, nil
}

// AddCounters adds usage to key's current session in one atomic UPDATE:
// concurrent calls never lose an increment. ContextTokens, Model and
// Provider replace the stored value when set. lastInteractionAt does not
// move. A key without an entry is sessions.ErrNotFound. The commit is lazy
// (lazy.go): counters are routine, the files backend coalesces them for up
// to a second, and both repair them from transcripts.
func (x *Index) AddCounters(ctx context.Context, key routing.Key, c sessions.Counters) error {
	ctx = withOp(ctx, OpCounters)
	k, err := x.keyString(key)
	if err != nil {
		return fmt.Errorf("pgstore: add counters: %w", err)
	}
	var tag pgconn.CommandTag
	err = x.db.lazyBatch(ctx, func(b *pgx.Batch) {
		b.Queue(addCountersSQL, x.agentID, k, c.InputTokens, c.OutputTokens, c.TotalTokens, c.Messages, c.ContextTokens,
			c.Model, c.Provider, x.db.clock()).Exec(func(t pgconn.CommandTag) error {
			tag = t
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("pgstore: add counters: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: add counters: %w: %s", sessions.ErrNotFound, k)
	}
	return nil
}

// addCountersSQL adds counters to one entry.
const addCountersSQL = `UPDATE entries SET
		input_tokens = input_tokens + $3, output_tokens = output_tokens + $4, total_tokens = total_tokens + $5,
		message_count = message_count + $6,
		context_tokens = CASE WHEN $7::bigint > 0 THEN $7 ELSE context_tokens END,
		model = COALESCE(NULLIF($8::text, ''), model), provider = COALESCE(NULLIF($9::text, ''), provider),
		updated_at = GREATEST(updated_at, $10::timestamptz)
		WHERE agent_id = $1 AND session_key = $2`

// clip shortens an id from a chat for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
