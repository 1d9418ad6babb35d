package sqlitestore

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// DeleteArchived marks the archived session sessionID of key deleted
// (sessions.Index.DeleteArchived): reason "deleted", Deleted true, its
// transcript kept; one already deleted is left as it is. Only the
// sessions Archived lists can be deleted.
func (s *Store) DeleteArchived(ctx context.Context, key routing.Key, sessionID string) error {
	k, err := s.keyString(key)
	if err != nil {
		return fmt.Errorf("sqlitestore: delete archived: %w", err)
	}
	if sessions.CheckSessionID(sessionID) != nil {
		return fmt.Errorf("sqlitestore: delete archived: %w: %s has no archived session %q", sessions.ErrNotFound, k, clip(sessionID))
	}
	err = s.db.w.do(ctx, func(tx *wtx) error {
		r, err := tx.Exec(`UPDATE archived SET deleted = 1, reason = 'deleted'
			WHERE session_id = ? AND id IN (SELECT id FROM archived WHERE agent_id = ? AND session_key = ?
				ORDER BY archived_at DESC, id DESC LIMIT ?)`, sessionID, s.agentID, k, sessions.MaxArchivedPerKey)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: delete archived: %w", err)
	}
	return nil
}

// RenameKey moves the session of from to to (sessions.Index.RenameKey) in
// one job of the writer, so one transaction: the entry row takes the new
// key (updatedAt moves), and so do from's archived sessions; transcripts
// belong to the session id and stay. The writer is the only one, so no
// Begin can create to between the check and the move.
func (s *Store) RenameKey(ctx context.Context, from, to routing.Key) (sessions.Entry, error) {
	fk, err := s.keyString(from)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: rename key: %w", err)
	}
	tk, err := s.keyString(to)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: rename key: %w", err)
	}
	if fk == tk {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: rename key: %s to itself", sessions.Clip(fk))
	}
	now := s.db.clock()
	var e sessions.Entry
	err = s.db.w.do(ctx, func(tx *wtx) error {
		cur, ok, err := s.get(ctx, tx, fk)
		if err != nil {
			return err
		}
		dst, taken, err := s.get(ctx, tx, tk)
		if err != nil {
			return err
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
		moved := cur
		moved.SessionKey = tk
		if now.After(moved.UpdatedAt) {
			moved.UpdatedAt = now
		}
		if _, err := tx.Exec(`DELETE FROM entries WHERE agent_id = ? AND session_key = ?`, s.agentID, fk); err != nil {
			return fmt.Errorf("move entry: %w", err)
		}
		if err := s.insert(tx, moved); err != nil {
			return fmt.Errorf("move entry: %w", err)
		}
		if _, err := tx.Exec(`UPDATE archived SET session_key = ? WHERE agent_id = ? AND session_key = ?`,
			tk, s.agentID, fk); err != nil {
			return fmt.Errorf("move archived sessions: %w", err)
		}
		e = moved
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sqlitestore: rename key: %w", err)
	}
	return e, nil
}
