package sessions

// This file fixes the exported API the rest of the daemon codes against.
// The implementation replaces the bodies (and may split this file); callers
// rely on these names and meanings.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
)

var errTODO = errors.New("sessions: not implemented yet")

// ErrNotFound is returned when a session key or id is unknown.
var ErrNotFound = errors.New("session not found")

// Options configures a Manager.
type Options struct {
	StateDir      string
	CacheTTL      time.Duration // default 45s; GATEWAY_SESSION_CACHE_TTL_MS overrides; 0 disables? use -1 for "unset"
	FlushInterval time.Duration // counters coalesced at most this long (default 1s)
	LockTimeout   time.Duration // default 10s
	MaxHold       time.Duration // default 5m
	Maintenance   Maintenance
	Reset         ResetConfig
	Logger        *zap.Logger
	Now           func() time.Time
}

// Manager owns every agent's store below StateDir and the ingress journal.
type Manager struct{}

// Open opens (creating if needed) the state directory.
func Open(opts Options) (*Manager, error) { return nil, errTODO }

// Close flushes coalesced counters and releases resources.
func (m *Manager) Close() error { return errTODO }

// Store returns the store of one agent (created on first use).
func (m *Manager) Store(agentID string) (*Store, error) { return nil, errTODO }

// Journal returns the durable ingress journal.
func (m *Manager) Journal() *Journal { return nil }

// SetReset swaps the reset policy; the next evaluation uses it (hot reload).
func (m *Manager) SetReset(c ResetConfig) {}

// Origin describes the inbound message that touches a session.
type Origin struct {
	Channel   string
	ChatType  string
	AccountID string
	To        string // chat id replies go to
	ThreadID  string
	From      string // sender id
	Name      string // display name
	Title     string // first message text (first 30 chars become the title)
	ParentKey string
	At        time.Time
}

// BeginInfo says what Begin did.
type BeginInfo struct {
	Created bool
	// ResetReason is "daily", "idle" or "" when the previous session was kept.
	ResetReason string
	Previous    string // archived session id on reset
}

// Store is one agent's sessions.json plus its transcripts.
type Store struct{}

// Get returns the entry for key.
func (s *Store) Get(key routing.Key) (Entry, bool, error) { return Entry{}, false, errTODO }

// List returns every entry, most recently updated first.
func (s *Store) List() ([]Entry, error) { return nil, errTODO }

// Begin returns the session an inbound message belongs to: it creates it on
// the first message, rolls it over when the reset policy says it is stale,
// moves lastInteractionAt and records the origin. Creation and reset are
// durable before Begin returns.
func (s *Store) Begin(ctx context.Context, key routing.Key, o Origin) (Entry, BeginInfo, error) {
	return Entry{}, BeginInfo{}, errTODO
}

// ResetOptions tunes a manual or timed reset.
type ResetOptions struct {
	Manual bool   // /new, /reset: keeps model and queue overrides
	Model  string // /new <model>
	Reason string
}

// Reset starts a new session id for key and archives the old transcript.
func (s *Store) Reset(ctx context.Context, key routing.Key, o ResetOptions) (Entry, error) {
	return Entry{}, errTODO
}

// Patch changes an entry durably under the store lock.
func (s *Store) Patch(ctx context.Context, key routing.Key, fn func(*Entry) error) (Entry, error) {
	return Entry{}, errTODO
}

// Counters is a coalesced counter update.
type Counters struct {
	InputTokens, OutputTokens, TotalTokens int64
	ContextTokens                          int64 // absolute, 0 leaves it
	Messages                               int
	Model, Provider                        string
}

// AddCounters records usage without rewriting sessions.json synchronously.
func (s *Store) AddCounters(key routing.Key, c Counters) {}

// Delete archives the session's transcript and removes the entry.
func (s *Store) Delete(ctx context.Context, key routing.Key) error { return errTODO }

// Transcript returns the transcript of session id (of this agent).
func (s *Store) Transcript(sessionID string) (*Transcript, error) { return nil, errTODO }

// Transcript is one append-only JSONL file.
type Transcript struct{}

// Append writes complete messages durably and returns their entry ids.
func (t *Transcript) Append(ctx context.Context, msgs ...Message) ([]string, error) {
	return nil, errTODO
}

// Compaction is a compaction entry to append.
type Compaction struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int64
	TokensAfter      int64
}

// AppendCompaction appends a compaction entry.
func (t *Transcript) AppendCompaction(ctx context.Context, c Compaction) (string, error) {
	return "", errTODO
}

// Context rebuilds what the model is sent (SPEC §3.4).
func (t *Transcript) Context(ctx context.Context) (Context, error) { return Context{}, errTODO }

// History returns every message of the chain, compactions ignored (for the
// operator view and GET history).
func (t *Transcript) History(ctx context.Context) ([]Message, error) { return nil, errTODO }

// Record is one journaled inbound message.
type Record struct {
	ID         string          `json:"id"` // channel:account:chat:messageId
	AgentID    string          `json:"agentId"`
	SessionKey string          `json:"sessionKey"`
	Payload    json.RawMessage `json:"payload"` // the channel's Inbound, opaque here
	Attempts   int             `json:"attempts"`
	Consumed   bool            `json:"consumed"` // user message is in the transcript
	AcceptedAt time.Time       `json:"acceptedAt"`
}

// Journal is the durable ingress journal (SPEC §3.7).
type Journal struct{}

// Accept journals rec durably. dup is true (and nothing is written) when the
// same id was accepted before.
func (j *Journal) Accept(ctx context.Context, rec Record) (dup bool, err error) { return false, errTODO }

// Consumed marks that the record's message is in the transcript.
func (j *Journal) Consumed(id string) error { return errTODO }

// Attempt counts one more attempt and returns the count.
func (j *Journal) Attempt(id string) (int, error) { return 0, errTODO }

// Done marks the record's turn complete (reply delivered or given up).
func (j *Journal) Done(id string) error { return errTODO }

// Pending returns accepted records not yet Done, oldest first.
func (j *Journal) Pending() ([]Record, error) { return nil, errTODO }
