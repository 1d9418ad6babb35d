package sessions

import (
	"encoding/json"
	"errors"
	"syscall"
	"time"
)

// Record is one journaled inbound message.
type Record struct {
	ID         string          `json:"id"` // channel:account:chat:messageId
	AgentID    string          `json:"agentId"`
	SessionKey string          `json:"sessionKey"`
	Payload    json.RawMessage `json:"payload"` // the channel's Inbound, opaque here
	// Starts counts turns begun for the record; Failures those that ended
	// in a failure that leaves it pending. Starts-Failures is how many
	// times the process died (or lost its storage) while it was in flight.
	Starts   int `json:"starts,omitempty"`
	Failures int `json:"failures,omitempty"`
	// Attempts and Consumed are read from journals of earlier releases.
	Attempts   int       `json:"attempts,omitempty"`
	Consumed   bool      `json:"consumed,omitempty"`
	AcceptedAt time.Time `json:"acceptedAt"`
}

// Deaths is how many turns of the record began and never ended (the
// process died, or its storage failed, while it ran).
func (r Record) Deaths() int { return max(r.Starts+r.Attempts-r.Failures, 0) }

// Reply is one outbox entry: a turn's outcome ready to deliver. It is
// written once before the first chunk is sent; Sent counts the chunks the
// platform accepted. When Sent reaches len(Chunks) the reply and every one of
// its Records are done, in that one write.
type Reply struct {
	ID         string   `json:"id"`
	Records    []string `json:"records,omitempty"`
	AgentID    string   `json:"agentId,omitempty"`
	SessionKey string   `json:"sessionKey,omitempty"`
	// Target is where the reply goes, owned by the caller (opaque here).
	Target json.RawMessage `json:"target"`
	Chunks []string        `json:"chunks"`
	Sent   int             `json:"sent,omitempty"`
	// EntryID is the transcript entry of the reply ("" for notices).
	EntryID string `json:"entryId,omitempty"`
	// Draft is the id of a Draft the reply's first chunk replaces; the
	// draft's record is retired by this reply's ready line.
	Draft     string    `json:"draft,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// JournalStats counts the journal's work since it was opened.
type JournalStats struct {
	Lines, Fsyncs, WriteFailures int64
	Pending, Replies             int
}

// Draft is a message a running turn shows in a chat (streaming: a status
// line, or the answer so far) recorded when it is posted, so a start after
// a crash finds every draft the dead process left and can clear it (never
// a half answer left behind). It is written like a mark (no fsync of its
// own); a reply that takes the draft over (Reply.Draft) retires it in the
// same line, and DraftDone retires it once it was deleted.
type Draft struct {
	ID string `json:"id"` // the caller's id, unique per draft message
	// SessionKey is the session whose turn showed it.
	SessionKey string `json:"sessionKey,omitempty"`
	// Target is where the draft is (channel, account, chat), owned by the
	// caller (opaque here); MessageID is the platform's id of the message.
	Target    json.RawMessage `json:"target"`
	MessageID string          `json:"messageId"`
	CreatedAt time.Time       `json:"createdAt"`
}

// ErrStorage marks failures to write durable state (disk full, I/O error).
// Callers refuse new work with a clear error while it lasts.
var ErrStorage = errors.New("storage unavailable")

// IsStorage reports whether err is the local storage failing (ErrStorage,
// disk full, an I/O error, a read-only or over-quota file system): work
// that met it waits for the storage instead of counting as a failure.
func IsStorage(err error) bool {
	return errors.Is(err, ErrStorage) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// Journal retention of completed ids for duplicate detection: an id is
// remembered while it is younger than DoneRetention or among the last
// DoneKeep completed ids.
const (
	DoneRetention = 24 * time.Hour
	DoneKeep      = 10000
)
