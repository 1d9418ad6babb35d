package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// CallTimeout bounds each statement of the Store methods whose signature
// (the files backend's, kept by sessions.Index) carries no context: reads
// and AddCounters. A server that does not answer fails them instead of
// blocking a turn forever.
const CallTimeout = 30 * time.Second

// Store is an agent's Index seen through sessions.Index, the seam the
// daemon's consumers use: the methods of filestore.Store with their
// signatures. The methods that take a context pass it on; the others run
// under CallTimeout. Every write is durable when it returns, so Flush has
// nothing to do. Errors that say the server could not serve a call (it
// is restarting or unreachable, a statement timed out) wrap
// sessions.ErrStorage, for the index and the transcripts it opens alike.
// A Store is safe for concurrent use.
type Store struct {
	x   *Index
	log *zap.Logger
}

var _ sessions.AgentStore = (*Store)(nil)

// Store returns agentID's session index as a sessions.Index; reset is as
// for DB.Index.
func (db *DB) Store(agentID string, reset func() sessions.ResetConfig) *Store {
	return &Store{x: db.Index(agentID, reset), log: db.log.With(zap.String("agent_id", agentID))}
}

// Index is the Index behind s, whose methods all take a context.
func (s *Store) Index() *Index { return s.x }

// AgentID is the agent whose sessions s holds.
func (s *Store) AgentID() string { return s.x.AgentID() }

func call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), CallTimeout)
}

// Get returns the entry for key. A key this process has not begun a
// session for yet remembers the session read (begin_inputs.go), as an
// accept's QueuePeek does: the next Begin of the key can then carry the
// turn's inputs, as a later one's does (issue 21).
func (s *Store) Get(key routing.Key) (sessions.Entry, bool, error) {
	ctx, cancel := call()
	defer cancel()
	if err := s.settle(ctx, key); err != nil {
		return sessions.Entry{}, false, s.x.db.storageErr(err)
	}
	e, ok, err := s.x.Get(ctx, key)
	if err == nil && ok {
		s.x.db.heads.note(s.x.agentID, e.SessionKey, e.SessionID)
	}
	return e, ok, s.x.db.storageErr(err)
}

// GetByID returns the current entry whose session id is id.
func (s *Store) GetByID(id string) (sessions.Entry, bool, error) {
	ctx, cancel := call()
	defer cancel()
	if err := s.settle(ctx, routing.Key{}); err != nil {
		return sessions.Entry{}, false, s.x.db.storageErr(err)
	}
	e, ok, err := s.x.GetByID(ctx, id)
	return e, ok, s.x.db.storageErr(err)
}

// List returns every entry, most recently updated first (ties by key).
func (s *Store) List() ([]sessions.Entry, error) {
	ctx, cancel := call()
	defer cancel()
	if err := s.settle(ctx, routing.Key{}); err != nil {
		return nil, s.x.db.storageErr(err)
	}
	l, err := s.x.List(ctx)
	return l, s.x.db.storageErr(err)
}

// Recent returns the n most recently updated entries, in List's order.
func (s *Store) Recent(n int) ([]sessions.Entry, error) {
	ctx, cancel := call()
	defer cancel()
	if err := s.settle(ctx, routing.Key{}); err != nil {
		return nil, s.x.db.storageErr(err)
	}
	l, err := s.x.Recent(ctx, n)
	return l, s.x.db.storageErr(err)
}

// Archived returns the sessions of key that were reset, deleted or
// switched away from, newest first.
func (s *Store) Archived(key routing.Key) ([]sessions.Archived, error) {
	ctx, cancel := call()
	defer cancel()
	if err := s.settle(ctx, key); err != nil {
		return nil, s.x.db.storageErr(err)
	}
	l, err := s.x.Archived(ctx, key)
	return l, s.x.db.storageErr(err)
}

// Begin is Index.Begin. The counters queued for the session (AddCounters)
// are written in its transaction.
func (s *Store) Begin(ctx context.Context, key routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo, error) {
	k, err := s.x.keyString(key)
	if err != nil {
		return s.x.Begin(ctx, key, o) // it refuses the key
	}
	queued, err := s.x.db.counters.take(ctx, s.x.agentID, k)
	if err != nil {
		return sessions.Entry{}, sessions.BeginInfo{}, s.x.db.storageErr(err)
	}
	defer s.x.db.counters.finish(queued)
	e, info, err := s.x.begin(ctx, key, o, queued)
	return e, info, s.x.db.storageErr(err)
}

// TakesInputsAhead reports that Begin appends a sessions.InputsAhead
// (begin_inputs.go).
func (s *Store) TakesInputsAhead() bool { return true }

// Reset is Index.Reset.
func (s *Store) Reset(ctx context.Context, key routing.Key, o sessions.ResetOptions) (sessions.Entry, error) {
	if err := s.settle(ctx, key); err != nil {
		return sessions.Entry{}, s.x.db.storageErr(err)
	}
	e, err := s.x.Reset(ctx, key, o)
	if err == nil {
		s.x.db.heads.set(s.x.agentID, e.SessionKey, e.SessionID)
	}
	return e, s.x.db.storageErr(err)
}

// Patch is Index.Patch.
func (s *Store) Patch(ctx context.Context, key routing.Key, fn func(*sessions.Entry) error) (sessions.Entry, error) {
	if err := s.settle(ctx, key); err != nil {
		return sessions.Entry{}, s.x.db.storageErr(err)
	}
	e, err := s.x.Patch(ctx, key, fn)
	return e, s.x.db.storageErr(err)
}

// Delete is Index.Delete.
func (s *Store) Delete(ctx context.Context, key routing.Key) error {
	if err := s.settle(ctx, key); err != nil {
		return s.x.db.storageErr(err)
	}
	return s.x.db.storageErr(s.x.Delete(ctx, key))
}

// DeleteArchived is Index.DeleteArchived.
func (s *Store) DeleteArchived(ctx context.Context, key routing.Key, sessionID string) error {
	if err := s.settle(ctx, key); err != nil {
		return s.x.db.storageErr(err)
	}
	return s.x.db.storageErr(s.x.DeleteArchived(ctx, key, sessionID))
}

// Switch is Index.Switch.
func (s *Store) Switch(ctx context.Context, key routing.Key, sessionID string) (sessions.Entry, error) {
	if err := s.settle(ctx, key); err != nil {
		return sessions.Entry{}, s.x.db.storageErr(err)
	}
	e, err := s.x.Switch(ctx, key, sessionID)
	if err == nil {
		s.x.db.heads.set(s.x.agentID, e.SessionKey, e.SessionID)
	}
	return e, s.x.db.storageErr(err)
}

// RenameKey is Index.RenameKey; the counters queued for either key are
// written first, so they move with the session.
func (s *Store) RenameKey(ctx context.Context, from, to routing.Key) (sessions.Entry, error) {
	for _, k := range []routing.Key{from, to} {
		if err := s.settle(ctx, k); err != nil {
			return sessions.Entry{}, s.x.db.storageErr(err)
		}
	}
	e, err := s.x.RenameKey(ctx, from, to)
	return e, s.x.db.storageErr(err)
}

// AddCounters adds usage to key's current session in the background
// (counters.go): it returns at once, and every other method of s (of any
// Store of the DB) waits for it first. Failures are logged, as the files
// backend logs counters it drops: usage is bookkeeping, never a reason to
// fail a turn.
func (s *Store) AddCounters(key routing.Key, c sessions.Counters) {
	k, err := s.x.keyString(key)
	if err != nil {
		s.log.Warn("counters dropped", zap.String("session_key", key.String()), zap.Error(err))
		return
	}
	s.x.db.counters.add(s.x.agentID, k, c)
}

// settle waits for the counters of key queued before it (AddCounters);
// a zero key waits for every session's.
func (s *Store) settle(ctx context.Context, key routing.Key) error {
	if key.IsZero() {
		return s.x.db.counters.wait(ctx, "", "")
	}
	k, err := s.x.keyString(key)
	if err != nil {
		return nil // the method itself refuses the key
	}
	return s.x.db.counters.wait(ctx, s.x.agentID, k)
}

// Flush writes the counters queued and waits for the WAL flush past them
// (and past every lazy commit before it); every other write of a Store
// is durable when it returns.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.settle(ctx, routing.Key{}); err != nil {
		return err
	}
	if err := s.x.db.flushWAL(ctx); err != nil {
		return fmt.Errorf("pgstore: flush: %w", err)
	}
	return nil
}

// TranscriptOf returns the transcript of the session e describes; its
// header (written by the first append) records e's key and this agent.
func (s *Store) TranscriptOf(e sessions.Entry) (sessions.TranscriptLog, error) {
	return s.open(e.SessionID, transcript.Header{SessionKey: e.SessionKey, AgentID: s.AgentID()})
}

// open avoids returning a nil *TranscriptLog as a non-nil interface; the
// transcript's errors are wrapped by DB.storageErr.
func (s *Store) open(sessionID string, hdr transcript.Header) (sessions.TranscriptLog, error) {
	t, err := s.x.db.Transcript(sessionID, hdr)
	if err != nil {
		return nil, err
	}
	return storeTranscript{t}, nil
}

// Transcript returns the transcript of session sessionID, current or
// archived: its rows outlive a reset, a delete or a switch. sessionID must
// be a canonical UUID; the header of a transcript still empty records the
// key of the current session with that id, if any.
func (s *Store) Transcript(sessionID string) (sessions.TranscriptLog, error) {
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("pgstore: transcript: %w", err)
	}
	hdr := transcript.Header{AgentID: s.AgentID()}
	e, ok, err := s.GetByID(sessionID)
	switch {
	case err != nil && !errors.Is(err, sessions.ErrNotFound):
		return nil, fmt.Errorf("pgstore: transcript %s: %w", sessionID, err) // Get wrapped it
	case ok:
		hdr.SessionKey = e.SessionKey
	default:
		// Not a current session of this agent: refuse another agent's
		// transcript (the files backend keeps them in separate dirs).
		owner, err := s.owner(sessionID)
		if err != nil {
			return nil, fmt.Errorf("pgstore: transcript %s: %w", sessionID, s.x.db.storageErr(err))
		}
		if owner != "" && owner != s.AgentID() {
			return nil, fmt.Errorf("pgstore: transcript %s: %w: it belongs to agent %q, not %q",
				sessionID, sessions.ErrNotFound, owner, s.AgentID())
		}
	}
	return s.open(sessionID, hdr)
}

// owner is the agent a transcript's session header names ("" when the
// transcript has no header yet).
func (s *Store) owner(sessionID string) (string, error) {
	ctx, cancel := call()
	ctx = withOp(ctx, OpContext)
	defer cancel()
	var agent string
	err := s.x.db.pool.QueryRow(ctx, `SELECT COALESCE(body->>'agentId', '') FROM transcript_entries
		WHERE session_id = $1 AND seq = 1 AND type = 'session'`, sessionID).Scan(&agent)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return agent, err
}
