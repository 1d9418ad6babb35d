package sessions

import (
	"context"

	"github.com/gateway/gateway/routing"
)

// Index is one agent's session index: each session key's current Entry,
// and the sessions of a key that were reset, deleted or switched away from
// (SPEC §3.2, §3.3, §3.6). It is the storage seam of the index (SPEC
// §3.8): the files backend (*Store, sessions.json) and the PostgreSQL
// backend (pgstore.Store) implement it, and package sessionstest holds the
// conformance suite both pass. An Index is safe for concurrent use.
//
// Begin, Reset, Patch, Delete and Switch are durable when they return.
// AddCounters is routine: its effect is visible to readers at once and
// durable after the next Flush (a backend may write it at once, and then
// Flush has nothing to do). Methods name their key's agent; a key of
// another agent is an error. ErrNotFound (with errors.Is) means the key or
// session id is unknown.
type Index interface {
	// AgentID is the agent whose sessions the index holds.
	AgentID() string

	// Get returns the entry of key; false when key has no session.
	Get(key routing.Key) (Entry, bool, error)
	// GetByID returns the current entry whose session id is id.
	GetByID(id string) (Entry, bool, error)
	// List returns every entry, most recently updated first, ties by key.
	List() ([]Entry, error)
	// Recent returns the n most recently updated entries in List's order.
	Recent(n int) ([]Entry, error)
	// Archived returns the sessions of key that were reset, deleted or
	// switched away from, newest first, at most MaxArchivedPerKey.
	Archived(key routing.Key) ([]Archived, error)

	// Begin returns the session an inbound message belongs to: created on
	// the first message, rolled over (the old one archived, the reason in
	// BeginInfo) when the reset policy says it is stale, else touched
	// (lastInteractionAt moves unless o.Internal; the origin is recorded).
	// Callers beginning the same key at once get the same session.
	Begin(ctx context.Context, key routing.Key, o Origin) (Entry, BeginInfo, error)
	// Reset archives key's session and starts a new one (RolledOver); a
	// key without a session gets a new one.
	Reset(ctx context.Context, key routing.Key, o ResetOptions) (Entry, error)
	// Patch changes key's entry with fn, which gets a copy, must be quick
	// and must not call the index. The key and session id cannot change;
	// updatedAt moves, lastInteractionAt does not.
	Patch(ctx context.Context, key routing.Key, fn func(*Entry) error) (Entry, error)
	// Delete archives key's session (reason "deleted") and removes the
	// entry; Switch can bring it back.
	Delete(ctx context.Context, key routing.Key) error
	// Switch makes the archived session sessionID of key current again,
	// archiving the current one (reason "switch") in its place.
	Switch(ctx context.Context, key routing.Key, sessionID string) (Entry, error)

	// AddCounters adds usage to key's current session without moving
	// lastInteractionAt. It never fails the caller: a key without a
	// session, or a store that cannot be written, is logged and skipped.
	AddCounters(key routing.Key, c Counters)
	// Flush makes the routine updates made so far durable.
	Flush(ctx context.Context) error
}

var _ Index = (*Store)(nil)
