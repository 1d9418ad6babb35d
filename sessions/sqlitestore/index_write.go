package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

func (s *Store) resetConfig() sessions.ResetConfig {
	if s.reset == nil {
		return sessions.ResetConfig{}
	}
	return s.reset()
}

// Begin returns the session an inbound message belongs to, as
// filestore.Store.Begin does: it creates the entry on the first message,
// rolls it over (archiving the old session id) when the reset policy says
// it is stale, moves lastInteractionAt unless o.Internal, and records the
// origin. The read and the write are one job of the writer, so callers
// beginning one key at once get the same session.
func (s *Store) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("sqlitestore: begin: %w", err)
	}
	now := s.db.clock()
	if o.At.IsZero() {
		o.At = now
	}
	o.At = o.At.UTC()
	o = o.Clean()
	cfg, judged := s.resetConfig(), o.JudgedAt(now)
	var (
		e    sessions.Entry
		info sessions.BeginInfo
	)
	err = s.db.w.do(ctx, func(tx *wtx) error {
		info = sessions.BeginInfo{}
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if !ok {
			e = sessions.NewEntry(key, o, now)
			info.Created = true
			return s.insert(tx, e)
		}
		expired, reason := sessions.Expiry(cfg, key, cur, judged)
		if expired.IsZero() {
			e = touched(cur, o, now)
			return s.update(tx, e)
		}
		if err := s.archive(tx, k, cur, reason, false, now); err != nil {
			return err
		}
		e = sessions.RolledOver(cur, false, "", now)
		e.LastInteractionAt = sessions.StartInteraction(o, now)
		sessions.ApplyOrigin(&e, o)
		info = sessions.BeginInfo{ResetReason: reason, Previous: cur.SessionID, ExpiredAt: expired}
		return s.update(tx, e)
	})
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("sqlitestore: begin %s: %w", k, err)
	}
	return e, info, nil
}

// touched is cur after an inbound message o on its fresh session: the
// clocks never move back, internal work leaves lastInteractionAt, and the
// origin is recorded.
func touched(cur sessions.Entry, o sessions.Origin, now time.Time) sessions.Entry {
	e := cur
	if !o.Internal && o.At.After(e.LastInteractionAt) {
		e.LastInteractionAt = o.At
	}
	if now.After(e.UpdatedAt) {
		e.UpdatedAt = now
	}
	sessions.ApplyOrigin(&e, o)
	return e
}

// Reset starts a new session id for key and archives the old one in one
// transaction. A key without a session gets a new one.
func (s *Store) Reset(ctx context.Context, key routing.Key, o sessions.ResetOptions) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: reset: %w", err)
	}
	reason := o.Reason
	if reason == "" {
		reason = "reset"
		if o.Manual {
			reason = "manual"
		}
	}
	now := s.db.clock()
	var e sessions.Entry
	err = s.db.w.do(ctx, func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if !ok {
			e = sessions.NewEntry(key, sessions.Origin{At: now}, now)
			e.ModelOverride = o.Model
			return s.insert(tx, e)
		}
		if err := s.archive(tx, k, cur, reason, false, now); err != nil {
			return err
		}
		e = sessions.RolledOver(cur, o.Manual, o.Model, now)
		return s.update(tx, e)
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: reset %s: %w", k, err)
	}
	return e, nil
}

// Patch changes key's entry with fn (run inside the writer's job: it must
// be quick and must not call the store). The key and session id cannot
// change; updatedAt moves, lastInteractionAt does not.
func (s *Store) Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: patch: %w", err)
	}
	now := s.db.clock()
	var e sessions.Entry
	err = s.db.w.do(ctx, func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		c := cur
		if err := fn(&c); err != nil {
			return err
		}
		c.SessionKey, c.SessionID = cur.SessionKey, cur.SessionID
		c.UpdatedAt = now
		e = c
		return s.update(tx, c)
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: patch %s: %w", k, err)
	}
	return e, nil
}

// Delete archives key's session (reason "deleted") and removes its entry;
// its transcript stays, reachable from the archive (Switch).
func (s *Store) Delete(ctx context.Context, key routing.Key) error {
	k, err := s.keyString(key)
	if err != nil {
		return fmt.Errorf("sqlitestore: delete: %w", err)
	}
	now := s.db.clock()
	err = s.db.w.do(ctx, func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		if err := s.archive(tx, k, cur, "deleted", true, now); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM entries WHERE agent_id = ? AND session_key = ?`, s.agentID, k)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: delete %s: %w", k, err)
	}
	return nil
}

// Switch makes the archived session sessionID of key current again; the
// current session (if any) is archived in its place (reason "switch").
// Only the sessions Archived lists can be switched to.
func (s *Store) Switch(ctx context.Context, key routing.Key, sessionID string) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: switch: %w", err)
	}
	if sessions.CheckSessionID(sessionID) != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: switch: %w: %s has no archived session %q", sessions.ErrNotFound, k, clip(sessionID))
	}
	now := s.db.clock()
	var e sessions.Entry
	err = s.db.w.do(ctx, func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, k)
		if err != nil {
			return err
		}
		if ok && cur.SessionID == sessionID {
			e = cur
			return nil
		}
		var (
			recID int64
			rec   sessions.Archived
		)
		err = tx.QueryRow(`SELECT id, title, message_count, total_tokens FROM archived
			WHERE session_id = ? AND id IN (SELECT id FROM archived WHERE agent_id = ? AND session_key = ?
				ORDER BY archived_at DESC, id DESC LIMIT ?)
			ORDER BY id DESC LIMIT 1`, sessionID, s.agentID, k, sessions.MaxArchivedPerKey).
			Scan(&recID, &rec.Title, &rec.MessageCount, &rec.TotalTokens)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
		}
		if err != nil {
			return err
		}
		if ok {
			e = sessions.RolledOver(cur, true, "", now)
		} else {
			e = sessions.NewEntry(key, sessions.Origin{At: now}, now)
		}
		e.SessionID, e.Title, e.MessageCount, e.TotalTokens = sessionID, rec.Title, rec.MessageCount, rec.TotalTokens
		if ok {
			if err := s.archive(tx, k, cur, "switch", false, now); err != nil {
				return err
			}
			if err := s.update(tx, e); err != nil {
				return err
			}
		} else if err := s.insert(tx, e); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM archived WHERE id = ?`, recID)
		return err
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: switch %s: %w", k, err)
	}
	return e, nil
}

// AddCounters adds usage to key's current session (one job of the writer:
// concurrent calls never lose an increment) without moving
// lastInteractionAt. ContextTokens, Model and Provider replace the stored
// value when set. Failures are logged: usage is bookkeeping, never a
// reason to fail a turn; counters the database refuses are held and
// written later (counters_held.go).
func (s *Store) AddCounters(key routing.Key, c sessions.Counters) {
	k, err := s.keyString(key)
	if err != nil {
		s.log.Warn("counters dropped", zap.String("session_key", key.String()), zap.Error(err))
		return
	}
	ctx, cancel := call()
	defer cancel()
	now := s.db.clock()
	if s.heldFor(k, c, now) {
		return
	}
	// Lazy (writer.doLazy): the files backend keeps counters in memory
	// for up to a second, pgstore commits them without the WAL flush.
	err = s.db.w.doLazy(ctx, s.addCounters(ctx, k, "", c, now))
	if err != nil && retryable(err) {
		s.holdCounters(ctx, k, c, now, err)
		return
	}
	if err != nil {
		s.log.Warn("counters dropped", zap.String("session_key", k), zap.Error(err))
	}
}

// Flush writes the counters held back by a storage failure (every other
// write is durable when it returns).
func (s *Store) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.flushCounters()
}

func (s *Store) insert(tx *wtx, e sessions.Entry) error {
	body, extra, err := encodeEntry(e)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO entries (agent_id, session_key, session_id, updated_at, body, extra)
		VALUES (?, ?, ?, ?, ?, ?)`, s.agentID, e.SessionKey, e.SessionID, toNanos(e.UpdatedAt), body, extra)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return nil
}

func (s *Store) update(tx *wtx, e sessions.Entry) error {
	body, extra, err := encodeEntry(e)
	if err != nil {
		return err
	}
	r, err := tx.Exec(`UPDATE entries SET session_id = ?, updated_at = ?, body = ?, extra = ?
		WHERE agent_id = ? AND session_key = ?`, e.SessionID, toNanos(e.UpdatedAt), body, extra, s.agentID, e.SessionKey)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		return fmt.Errorf("update: %w: %s", sessions.ErrNotFound, e.SessionKey)
	}
	return nil
}

// archive records e, the current session of k, in the archived table.
func (s *Store) archive(tx *wtx, k string, e sessions.Entry, reason string, deleted bool, now time.Time) error {
	_, err := tx.Exec(`INSERT INTO archived (agent_id, session_key, session_id, reason, archived_at, title,
		session_started_at, updated_at, message_count, total_tokens, deleted)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.agentID, k, e.SessionID, reason, toNanos(now), e.Title, toNanos(e.SessionStartedAt), toNanos(e.UpdatedAt),
		e.MessageCount, e.TotalTokens, deleted)
	if err != nil {
		return fmt.Errorf("archive %s: %w", e.SessionID, err)
	}
	return nil
}
