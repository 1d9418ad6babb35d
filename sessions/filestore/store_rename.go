package filestore

import (
	"context"
	"fmt"
	"slices"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// RenameKey moves the session of from to to (sessions.Index.RenameKey):
// the entry with its counters (pending ones included: they are in the
// cached slot) and from's archived sessions. The transcript is the
// session id's and stays where it is.
//
// Crash safety: the move is one line of the change log,
// {"k":to,"r":from,"e":entry}, which a reader applies whole (delete from,
// put to) or, torn, not at all; a batch holding a move never folds the
// log into sessions.json, so no older line of the log can be re-applied
// after it (a fold's snapshot is written before the log is emptied). The
// archive list (archive.json) is replaced atomically before the log line:
// a crash between the two leaves the session under from with its history
// listed under to, which a repeated RenameKey completes.
func (s *Store) RenameKey(ctx context.Context, from, to routing.Key) (sessions.Entry, error) {
	fk, err := s.keyString(from)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: rename key: %w", err)
	}
	tk, err := s.keyString(to)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: rename key: %w", err)
	}
	if fk == tk {
		return sessions.Entry{}, fmt.Errorf("sessions: rename key: %s to itself", sessions.Clip(fk))
	}
	s.repairKey(fk)
	s.repairKey(tk)
	var e sessions.Entry
	err = s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(fk)
		dst, taken := tx.get(tk)
		switch {
		case !ok && taken: // done before, or to's own: nothing to move
			e = dst
			return nil
		case !ok:
			return fmt.Errorf("%w: neither %s nor %s has a session", sessions.ErrNotFound, fk, tk)
		case taken && dst.SessionID != cur.SessionID:
			return fmt.Errorf("%w: %s has session %s, %s has %s", sessions.ErrKeyTaken, tk, dst.SessionID, fk, cur.SessionID)
		}
		moved := cur
		moved.SessionKey = tk
		moved.UpdatedAt = tx.now()
		tx.put(tk, moved)
		tx.del(fk)
		tx.renames[tk] = fk
		if err := tx.moveArchived(fk, tk); err != nil {
			return err
		}
		e = moved
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: rename key: %w", err)
	}
	return e, nil
}

// moveArchived gives to the archived sessions of from (newest first, as
// many as a key keeps).
func (o *opTx) moveArchived(from, to string) error {
	l, err := o.archived(from)
	if err != nil || len(l) == 0 {
		return err
	}
	have, err := o.archived(to)
	if err != nil {
		return err
	}
	all := append(have, l...)
	slices.SortStableFunc(all, func(a, b sessions.Archived) int { return b.ArchivedAt.Compare(a.ArchivedAt) })
	o.setArchived(to, all)
	o.setArchived(from, nil)
	return nil
}
