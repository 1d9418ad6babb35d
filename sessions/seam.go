package sessions

import (
	"context"
	"time"

	"github.com/gateway/gateway/internal/pairstate"
)

// The storage seam (SPEC §3.8, issue 12): dispatch, agents, api and the
// CLI reach durable state only through the interfaces below. Two backends
// implement them: files (Manager.Backend: sessions.json, JSONL transcripts,
// the ingress journal and room history logs under the state dir — the
// default) and postgres (package sessions/pgstore). Package sessionstest
// holds the conformance suites both pass.

// Backend is the daemon's durable state. It is safe for concurrent use.
type Backend interface {
	// Kind names the backend: "files" or "postgres".
	Kind() string
	// Store returns agentID's sessions (index and transcripts).
	Store(agentID string) (AgentStore, error)
	// Agents lists the agents that have stored sessions, sorted.
	Agents() ([]string, error)
	// Journal is the ingress journal, the reply outbox and the drafts.
	Journal() Delivery
	// History is the room history of group rooms.
	History() RoomLog
	// Pairing is the pairing state of every channel (package access
	// keeps the rules).
	Pairing() PairingState
	// Cursors holds channel cursors such as the Telegram offset.
	Cursors() Cursors
	// Limits holds the budget counters of package limits (seam_limits.go).
	Limits() LimitCounters
	// DeadLetters keeps the messages and replies given up (deadletters.go).
	DeadLetters() DeadLetters
	// Messages records the messages of each room the bot saw and sent
	// (the message tool, seam_messages.go).
	Messages() RoomMessages
	// Usage is the usage ledger (seam_usage.go).
	Usage() UsageLog
	// Search finds messages in the transcripts (seam_search.go).
	Search() Searcher
	// Memory holds the agents' notes that survive /new (memory.go).
	Memory() Memory
	// Jobs holds the scheduled jobs (seam_jobs.go).
	Jobs() Jobs

	// SetReset and SetMaintenance apply a reloaded configuration.
	SetReset(ResetConfig)
	ResetConfig() ResetConfig
	SetMaintenance(Maintenance) error

	// Flush makes routine updates (counters) durable.
	Flush(ctx context.Context) error
	// Status reports the backend for the doctor and /healthz: kind,
	// location, schema version, whether it answers.
	Status(ctx context.Context) BackendStatus
	// Close flushes and releases everything.
	Close() error
}

// BackendStatus is what Backend.Status reports.
type BackendStatus struct {
	Kind string `json:"kind"`
	// Location is where the state is: the state dir, or the database's
	// host/port/name (never a password).
	Location string `json:"location"`
	// SchemaVersion is the applied migration version (0 for files).
	SchemaVersion int64 `json:"schemaVersion,omitempty"`
	// Err is why the backend does not answer ("" when it does).
	Err string `json:"error,omitempty"`
	// Latency is how long the probe took.
	Latency time.Duration `json:"latencyNs,omitempty"`
}

// AgentStore is one agent's sessions: the index and the transcripts.
type AgentStore interface {
	Index
	// TranscriptOf opens the transcript of the session e describes (the
	// caller holds its entry, so opening costs nothing that grows with the
	// index).
	TranscriptOf(e Entry) (TranscriptLog, error)
	// Transcript opens the transcript of session id, current or archived.
	Transcript(sessionID string) (TranscriptLog, error)
}

// TranscriptLog is one session's append-only transcript (SPEC §3.4): pi
// messages chained by parent ids, compactions replacing what precedes their
// first kept entry. Appends are durable when they return (AppendLazy: once
// the process may die, see transcript.File.AppendLazy).
type TranscriptLog interface {
	Append(ctx context.Context, msgs ...Message) ([]string, error)
	AppendLazy(ctx context.Context, msgs ...Message) ([]string, error)
	AppendCompaction(ctx context.Context, c Compaction) (string, error)
	// Context rebuilds what the model is sent: the latest compaction's
	// summary and the messages after it.
	Context(ctx context.Context) (Context, error)
	// History is every message of the chain, compactions ignored.
	History(ctx context.Context) ([]Message, error)
	// Records reports what the transcript holds of some journal records
	// (recovery, SPEC §3.7).
	Records(ctx context.Context, ids []string) (RecordsState, error)
	// Stats is the number of message entries and a backend-specific
	// position of the latest compaction (0 if none).
	Stats(ctx context.Context) (messages int, lastCompaction int64, err error)
}

// RecordsState is what a transcript holds of some journal records.
type RecordsState struct {
	// Consumed holds the ids whose user message is in the transcript.
	Consumed map[string]bool
	// Answered is true when a complete assistant reply follows the latest
	// of those user messages (the turn finished before the process died);
	// Answer is its text and EntryID its entry.
	Answered bool
	Answer   string
	EntryID  string
	// Refused is true when that reply is the model's refusal (stopReason
	// StopRefusal): the caller says so when Answer is empty.
	Refused bool
	// Superseded is true when a user message of other records follows them
	// without a reply to them in between: the session moved on.
	Superseded bool
	// HistorySeq is the highest room history sequence those user messages
	// took (0: none): the caller cuts the room's history after it.
	HistorySeq uint64
	// Earlier are the turns before the latest that took some of the
	// records, oldest first (the fields above describe the latest): a
	// process that died after one turn's reply was appended and again
	// in the next turn leaves both turns' records pending, and each is
	// answered by its own reply. A turn ends at a complete reply or at a
	// user message of other records.
	Earlier []RecordsTurn
}

// RecordsTurn is one earlier turn of a RecordsState: the records it took
// and how it ended (Answered, Answer and EntryID as in RecordsState; or
// Superseded; or neither: it died before either).
type RecordsTurn struct {
	IDs        []string
	Answered   bool
	Answer     string
	EntryID    string
	Refused    bool
	Superseded bool
}

// StopRefusal is the stopReason of an assistant message in which the model
// declined to answer (Anthropic "refusal", OpenAI "content_filter").
const StopRefusal = "refusal"

// ErrNotInChain is wrapped by AppendCompaction's error when the first kept
// entry is not an entry of the current chain.
var ErrNotInChain = notInChain{}

type notInChain struct{}

func (notInChain) Error() string { return "not in the chain" }

// Delivery is the ingress journal and the reply outbox (SPEC §3.7): every
// accepted message is recorded before it is acknowledged and gets exactly
// one outcome; every reply is stored before it is sent and sent until
// delivered. Drafts are best-effort progress messages to clean up after a
// crash.
type Delivery interface {
	Accept(ctx context.Context, rec Record) (dup bool, err error)
	Start(ids ...string) error
	Fail(ids ...string) error
	Abort(ids ...string) error
	Done(ids ...string) error
	Ready(r Reply) error
	Sent(id string, n int) error
	Pending() ([]Record, error)
	Replies() ([]Reply, error)

	Draft(d Draft) error
	DraftDone(id string) error
	Drafts() ([]Draft, error)
	DraftLive(id string) bool

	// Health is nil while records can be written.
	Health() error
	Stats() JournalStats
}

// Orphans is implemented by a Delivery that several processes share (the
// PostgreSQL backend with replicas): Orphans takes over the pending
// records and undelivered replies that a process which died or stopped
// left, so a running one resumes them as a start would (Pending,
// Replies). The files backend has none: one process per state directory.
// A reply taken over answers older messages than any turn of its session
// this process runs later: until it is marked Sent, BeginTurn keeps those
// turns waiting, and the caller sends it outside its session's turns.
type Orphans interface {
	Orphans(ctx context.Context) (records []Record, replies []Reply, err error)
	// WaitOrphans returns after d, or earlier when another process may
	// have left work (it closed its Delivery), or when ctx ends.
	WaitOrphans(ctx context.Context, d time.Duration)
}

// RoomLog is the room history of group rooms, keyed by the room's session
// key (see RoomHistory).
type RoomLog interface {
	Append(ctx context.Context, room string, e HistoryEntry, lim HistoryLimits) (dup bool, err error)
	Add(ctx context.Context, room string, e HistoryEntry, lim HistoryLimits) (dup bool, wait func() error, err error)
	Take(room string, upTo uint64, lim HistoryLimits) ([]HistoryEntry, error)
	Cut(room string, upTo uint64) error
	Clear(room string) error
	ClearBefore(room string, t time.Time) error
	Len(room string) int
	Seq() uint64
	Stats() HistoryStats
}

// RoomLister is implemented by a RoomLog that can list its rooms (the
// files RoomHistory, pgstore's RoomLog): sessions/transfer's CopyRooms
// needs it on the source.
type RoomLister interface {
	// Rooms lists the rooms holding at least one kept entry, sorted.
	Rooms(ctx context.Context) ([]string, error)
}

// PairingState stores the pairing data of each channel (pending requests
// and approved senders); package access owns the rules (codes, expiry,
// caps) and calls it. The interface and its data types are declared in
// internal/pairstate, below both sessions and access: channel adapters
// import access and must not reach sessions (SPEC §1). A channel must pass
// pairstate.CheckChannel and the data stored pairstate.CheckData (its
// Data, Request and Approval are the pairing data); anything else
// is refused with an error naming it. Implementations (filestore.Pairing,
// pgstore.DB.Pairing) are safe for concurrent use by goroutines and
// processes; UpdatePairing serialises the updates of one channel.
type PairingState = pairstate.State

// Cursors holds small named values per scope (a channel account): the
// Telegram polling offset, chat migrations. SetCursor is durable when it
// returns; the last writer of a name wins. Scopes, names and values must
// pass CheckCursor (no NUL, bounded lengths): anything else is refused with
// an error naming it. Implementations are safe for concurrent use by
// goroutines and processes (filestore.Cursors, pgstore.DB.Cursors).
type Cursors interface {
	// Cursor returns scope's value of name; false when unset.
	Cursor(ctx context.Context, scope, name string) (string, bool, error)
	// CursorsOf returns every name → value of scope.
	CursorsOf(ctx context.Context, scope string) (map[string]string, error)
	SetCursor(ctx context.Context, scope, name, value string) error
}

// CursorScopes is implemented by a Cursors that can list its scopes
// (filestore.Cursors, pgstore's): sessions/transfer's CopyCursors needs it
// on the source.
type CursorScopes interface {
	CursorScopes(ctx context.Context) ([]string, error)
}
