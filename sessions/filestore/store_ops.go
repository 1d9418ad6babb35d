package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Begin returns the session an inbound message belongs to: it creates it on
// the first message, rolls it over when the reset policy says it is stale,
// moves lastInteractionAt and records the origin. Creation and reset are
// durable before Begin returns; touching a fresh session is a routine update
// (flushed within FlushInterval).
func (s *Store) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("sessions: begin: %w", err)
	}
	now := s.m.now()
	if o.At.IsZero() {
		o.At = now
	}
	cfg, judged := s.m.resetConfig(), o.JudgedAt(now)
	s.repairKey(k)

	s.mu.Lock()
	// A turn is about to write: the files are re-checked (two stats) rather
	// than trusted for the cache TTL, so a reset another process made — the
	// CLI with --no-daemon, a second tool — is seen before the turn starts.
	if err := s.revalidateLocked(time.Now()); err != nil {
		s.mu.Unlock()
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("sessions: begin: %w", err)
	}
	if sl, ok := s.slots[k]; ok {
		e := sl.entry()
		if stale, _ := sessions.Evaluate(cfg, key, e, judged); !stale {
			s.addDeltaToEntryLocked(k, sl, &e, touchDelta(e.SessionID, o, now))
			s.mu.Unlock()
			return e, sessions.BeginInfo{}, nil
		}
	}
	s.mu.Unlock()
	return s.beginCommit(ctx, k, key, o, cfg, judged)
}

// beginCommit is Begin's durable path: a key with no session, or whose
// session expired (or looked so), under the store lock. It is apart so
// that what its commit's closure captures is copied to the heap only when
// it runs, not on every message's Begin.
func (s *Store) beginCommit(ctx context.Context, k string, key routing.Key, o sessions.Origin, cfg sessions.ResetConfig, judged time.Time) (sessions.Entry, sessions.BeginInfo, error) {
	var (
		e    sessions.Entry
		info sessions.BeginInfo
	)
	err := s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(k)
		info = sessions.BeginInfo{}
		switch {
		case !ok:
			e = sessions.NewEntry(key, o, tx.now())
			info.Created = true
			tx.put(k, e)
			return tx.capLocked(k)
		default:
			expired, reason := sessions.Expiry(cfg, key, cur, judged)
			if expired.IsZero() { // another goroutine or process got here first
				e = cur
				touchDelta(cur.SessionID, o, tx.now()).apply(&e)
				break
			}
			if _, err := tx.archiveSession(k, cur, reason, false); err != nil {
				return err
			}
			e = sessions.RolledOver(cur, false, "", tx.now())
			e.LastInteractionAt = sessions.StartInteraction(o, tx.now())
			sessions.ApplyOrigin(&e, o)
			info = sessions.BeginInfo{ResetReason: reason, Previous: cur.SessionID, ExpiredAt: expired}
		}
		tx.put(k, e)
		return nil
	})
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, fmt.Errorf("sessions: begin: %w", err)
	}
	return e, info, nil
}

func touchDelta(sessionID string, o sessions.Origin, now time.Time) *delta {
	d := &delta{sessionID: sessionID, lastInteraction: o.At, updatedAt: now, origin: &o}
	if o.Internal {
		d.lastInteraction = time.Time{}
	}
	return d
}

// Reset starts a new session id for key and archives the old transcript as
// <id>.jsonl.reset.<ts>. A key without a session gets a new one. The result
// is durable when Reset returns.
func (s *Store) Reset(ctx context.Context, key routing.Key, o sessions.ResetOptions) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: reset: %w", err)
	}
	reason := o.Reason
	if reason == "" {
		reason = "reset"
		if o.Manual {
			reason = "manual"
		}
	}
	s.repairKey(k)
	var e sessions.Entry
	err = s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(k)
		if !ok {
			e = sessions.NewEntry(key, sessions.Origin{At: tx.now()}, tx.now())
			e.ModelOverride = o.Model
			tx.put(k, e)
			return tx.capLocked(k)
		}
		if _, err := tx.archiveSession(k, cur, reason, false); err != nil {
			return err
		}
		e = sessions.RolledOver(cur, o.Manual, o.Model, tx.now())
		tx.put(k, e)
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: reset: %w", err)
	}
	return e, nil
}

// Patch changes an entry durably under the store lock. fn gets a copy; it
// runs while the store is locked and must not call Store methods. The
// session key and id cannot be changed (use Reset or Switch), and Patch
// moves updatedAt but not lastInteractionAt.
func (s *Store) Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: patch: %w", err)
	}
	s.repairKey(k)
	var e sessions.Entry
	err = s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(k)
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		c := cur
		if err := fn(&c); err != nil {
			return err
		}
		c.SessionKey, c.SessionID = cur.SessionKey, cur.SessionID
		c.UpdatedAt = tx.now()
		tx.put(k, c)
		e = c
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: patch: %w", err)
	}
	return e, nil
}

// Delete archives the session's transcript as <id>.jsonl.deleted.<ts>,
// removes the entry and its lock file. The session stays in Archived(key)
// and can be brought back with Switch.
func (s *Store) Delete(ctx context.Context, key routing.Key) error {
	k, err := s.keyString(key)
	if err != nil {
		return fmt.Errorf("sessions: delete: %w", err)
	}
	err = s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(k)
		if !ok {
			return fmt.Errorf("%w: %s", sessions.ErrNotFound, k)
		}
		if _, err := tx.archiveSession(k, cur, "deleted", true); err != nil {
			return err
		}
		tx.del(k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sessions: delete: %w", err)
	}
	return nil
}

// DeleteArchived marks the archived session sessionID of key deleted in
// the archive list. Its transcript keeps its file name: a rename could leave
// the list naming a file that is not there yet after a crash, and the list,
// not the name, is what the chat and the seam read.
func (s *Store) DeleteArchived(ctx context.Context, key routing.Key, sessionID string) error {
	k, err := s.keyString(key)
	if err != nil {
		return fmt.Errorf("sessions: delete archived: %w", err)
	}
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return fmt.Errorf("sessions: delete archived: %w: %w", sessions.ErrNotFound, err)
	}
	err = s.commit(ctx, func(tx *opTx) error {
		list, err := tx.archived(k)
		if err != nil {
			return err
		}
		for i, a := range list {
			if a.SessionID != sessionID {
				continue
			}
			if a.Deleted {
				return nil
			}
			list[i].Deleted, list[i].Reason = true, "deleted"
			tx.setArchived(k, list)
			return nil
		}
		return fmt.Errorf("%w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
	})
	if err != nil {
		return fmt.Errorf("sessions: delete archived: %w", err)
	}
	return nil
}

// Archived returns the sessions of key that were reset, deleted or switched
// away from, newest first (at most MaxArchivedPerKey).
func (s *Store) Archived(key routing.Key) ([]sessions.Archived, error) {
	k, err := s.keyString(key)
	if err != nil {
		return nil, fmt.Errorf("sessions: archived: %w", err)
	}
	arch, err := s.archiveList()
	if err != nil {
		return nil, err
	}
	m := arch.m
	cur, ok, err := s.Get(key)
	if err != nil {
		return nil, err
	}
	var out []sessions.Archived
	for _, a := range m[k] {
		if ok && a.SessionID == cur.SessionID {
			continue // a crash between the archive list and the index
		}
		out = append(out, a)
	}
	return out, nil
}

// Switch makes the archived session sessionID of key current again; the
// current session (if any) is archived in its place. It is durable when it
// returns.
func (s *Store) Switch(ctx context.Context, key routing.Key, sessionID string) (sessions.Entry, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: switch: %w", err)
	}
	if err := sessions.CheckSessionID(sessionID); err != nil {
		// Not a session id at all, so no archived session of key: the
		// caller's "no such session" (as every backend answers it).
		return sessions.Entry{}, fmt.Errorf("sessions: switch: %w: %w", sessions.ErrNotFound, err)
	}
	var e sessions.Entry
	err = s.commit(ctx, func(tx *opTx) error {
		cur, ok := tx.get(k)
		if ok && cur.SessionID == sessionID {
			e = cur
			return nil
		}
		list, err := tx.archived(k)
		if err != nil {
			return err
		}
		i := -1
		for j, a := range list {
			if a.SessionID == sessionID {
				i = j
				break
			}
		}
		if i < 0 {
			return fmt.Errorf("%w: %s has no archived session %s", sessions.ErrNotFound, k, sessionID)
		}
		rec := list[i]
		tx.setArchived(k, append(list[:i:i], list[i+1:]...))
		if ok {
			if _, err := tx.archiveSession(k, cur, "switch", false); err != nil {
				return err
			}
			e = sessions.RolledOver(cur, true, "", tx.now())
		} else {
			e = sessions.NewEntry(key, sessions.Origin{At: tx.now()}, tx.now())
		}
		e.SessionID, e.Title = rec.SessionID, rec.Title
		e.MessageCount, e.TotalTokens = rec.MessageCount, rec.TotalTokens
		dir := tx.tx.s.dir
		src, dst := filepath.Join(dir, filepath.Base(rec.File)), filepath.Join(dir, sessionID+transcriptExt)
		tx.pre = append(tx.pre, func() error {
			if fileExists(dst) || !fileExists(src) {
				return nil
			}
			if err := renameDurable(src, dst); err != nil {
				return fmt.Errorf("restore transcript %s: %w", sessionID, err)
			}
			return nil
		})
		tx.put(k, e)
		if !ok {
			return tx.capLocked(k)
		}
		return nil
	})
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: switch: %w", err)
	}
	s.m.search.ensureSession(s.agentID, s.dir, e.SessionID)
	return e, nil
}
