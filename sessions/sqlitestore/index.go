package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// CallTimeout bounds the Store methods whose signature (sessions.Index's)
// carries no context: reads and AddCounters.
const CallTimeout = 30 * time.Second

// Store is one agent's sessions (sessions.AgentStore): the index as rows
// of the entries and archived tables, the transcripts as rows of
// transcript_entries. Every write is one job of the writer (writer.go):
// the job reads the entry and writes it back in the writer's transaction,
// so writes of one key never interleave and every write is durable when
// it returns (Flush has nothing to do). A Store is safe for concurrent
// use.
type Store struct {
	db      *DB
	agentID string
	// reset returns the reset policies Begin evaluates; nil never resets.
	reset func() sessions.ResetConfig
	log   *zap.Logger
	held  heldCounters // counters the database refused, until it takes them
}

var _ sessions.AgentStore = (*Store)(nil)

// Store returns agentID's sessions; reset gives the reset policies Begin
// applies, read on every call (nil: a session never rolls over by itself).
func (db *DB) Store(agentID string, reset func() sessions.ResetConfig) *Store {
	return &Store{db: db, agentID: agentID, reset: reset, log: db.log.With(zap.String("agent_id", agentID))}
}

// AgentID is the agent whose sessions s holds.
func (s *Store) AgentID() string { return s.agentID }

func call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), CallTimeout)
}

// keyString checks that key belongs to this store's agent.
func (s *Store) keyString(key routing.Key) (string, error) {
	if key.IsZero() {
		return "", errors.New("empty session key")
	}
	if key.Agent != s.agentID {
		return "", fmt.Errorf("key %q belongs to agent %q, not %q", key.String(), key.Agent, s.agentID)
	}
	return key.String(), nil
}

// encodeEntry is the row of e: its JSON body (Extra apart) and extra.
func encodeEntry(e sessions.Entry) (body, extra string, err error) {
	extra, e.Extra = e.Extra, ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", "", fmt.Errorf("encode entry %s: %w", e.SessionKey, err)
	}
	return string(b), extra, nil
}

func decodeEntry(body, extra string) (sessions.Entry, error) {
	var e sessions.Entry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return sessions.Entry{}, fmt.Errorf("decode entry: %w", err)
	}
	e.Extra = extra
	for _, t := range []*time.Time{&e.CreatedAt, &e.SessionStartedAt, &e.LastInteractionAt, &e.UpdatedAt} {
		*t = t.UTC()
	}
	return e, nil
}

// rowQuerier is the reading pool or the writer's transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func (s *Store) get(ctx context.Context, q rowQuerier, k string) (sessions.Entry, bool, error) {
	var body, extra string
	err := q.QueryRowContext(ctx, `SELECT body, extra FROM entries WHERE agent_id = ? AND session_key = ?`,
		s.agentID, k).Scan(&body, &extra)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Entry{}, false, nil
	}
	if err != nil {
		return sessions.Entry{}, false, storageErr(err)
	}
	e, err := decodeEntry(body, extra)
	return e, err == nil, err
}

// Get returns the entry for key.
func (s *Store) Get(key routing.Key) (sessions.Entry, bool, error) {
	k, err := s.keyString(key)
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("sqlitestore: get: %w", err)
	}
	ctx, cancel := call()
	defer cancel()
	e, ok, err := s.get(ctx, s.db.read, k)
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("sqlitestore: get %s: %w", k, err)
	}
	return e, ok, nil
}

// GetByID returns the current entry of this agent whose session id is id.
func (s *Store) GetByID(id string) (sessions.Entry, bool, error) {
	if sessions.CheckSessionID(id) != nil {
		return sessions.Entry{}, false, nil
	}
	ctx, cancel := call()
	defer cancel()
	var body, extra string
	err := s.db.read.QueryRowContext(ctx, `SELECT body, extra FROM entries WHERE session_id = ? AND agent_id = ?`,
		id, s.agentID).Scan(&body, &extra)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Entry{}, false, nil
	}
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("sqlitestore: get by id: %w", storageErr(err))
	}
	e, err := decodeEntry(body, extra)
	if err != nil {
		return sessions.Entry{}, false, fmt.Errorf("sqlitestore: get by id: %w", err)
	}
	return e, true, nil
}

// List returns every entry, most recently updated first (ties by key).
func (s *Store) List() ([]sessions.Entry, error) {
	out, err := s.list(`SELECT body, extra FROM entries WHERE agent_id = ?
		ORDER BY updated_at DESC, session_key`, s.agentID)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list: %w", err)
	}
	return out, nil
}

// Recent returns the n most recently updated entries, in List's order.
func (s *Store) Recent(n int) ([]sessions.Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := s.list(`SELECT body, extra FROM entries WHERE agent_id = ?
		ORDER BY updated_at DESC, session_key LIMIT ?`, s.agentID, n)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: recent: %w", err)
	}
	return out, nil
}

func (s *Store) list(q string, args ...any) ([]sessions.Entry, error) {
	ctx, cancel := call()
	defer cancel()
	var out []sessions.Entry
	err := s.db.query(ctx, func(r *sql.Rows) error {
		var body, extra string
		if err := r.Scan(&body, &extra); err != nil {
			return err
		}
		e, err := decodeEntry(body, extra)
		out = append(out, e)
		return err
	}, q, args...)
	return out, err
}

// Archived returns the sessions of key that were reset, deleted or
// switched away from, newest first, at most sessions.MaxArchivedPerKey.
func (s *Store) Archived(key routing.Key) ([]sessions.Archived, error) {
	k, err := s.keyString(key)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: archived: %w", err)
	}
	ctx, cancel := call()
	defer cancel()
	var out []sessions.Archived
	err = s.db.query(ctx, func(r *sql.Rows) error {
		var (
			a                    sessions.Archived
			at, started, updated int64
		)
		if err := r.Scan(&a.SessionID, &a.Reason, &at, &a.Title, &started, &updated,
			&a.MessageCount, &a.TotalTokens, &a.Deleted); err != nil {
			return err
		}
		a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt = fromNanos(at), fromNanos(started), fromNanos(updated)
		out = append(out, a)
		return nil
	}, `SELECT session_id, reason, archived_at, title, session_started_at, updated_at,
		message_count, total_tokens, deleted FROM archived WHERE agent_id = ? AND session_key = ?
		ORDER BY archived_at DESC, id DESC LIMIT ?`, s.agentID, k, sessions.MaxArchivedPerKey)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: archived: %w", err)
	}
	return out, nil
}

// fromNanos is a stored time: Unix nanoseconds, UTC; 0 is the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// toNanos is how t is stored (fromNanos reads it back).
func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// clip shortens an id from a chat for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
