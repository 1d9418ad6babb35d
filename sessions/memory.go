package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/routing"
)

// Memory (issue 24): small notes an agent keeps across sessions, so that
// what it learnt survives /new. Notes live in scopes: the agent's own
// (everything it hears), one sender's (a person, "<channel>:<senderId>")
// and one group room's ("<channel>:<chatId>"). The agent reads the notes
// of its turn's scopes at the start of each turn and writes them with its
// memory_* tools; a member reads and erases what is kept about them with
// /memory and /forget; the operator lists, shows, edits and forgets them
// (gateway memory, the API).
//
// A scope holds at most MemoryLimits.MaxNotes notes of at most
// MaxNoteBytes bytes each; a write past either is refused with an error
// saying which limit and what to do, and nothing is stored. Notes are
// numbered per scope from 1 in the order they were added, and a number is
// never given again while the scope holds notes (a forgotten note's number
// names nothing rather than another note). Every write is durable when it
// returns and atomic: concurrent writers in any number of processes lose
// nothing and never pass a limit.

// Memory scope kinds.
const (
	MemoryAgent  = "agent"  // the agent's own notes (ID "")
	MemorySender = "sender" // one person's: ID "<channel>:<senderId>"
	MemoryRoom   = "room"   // one group room's: ID "<channel>:<chatId>"
)

// Bounds of the memory limits: configured limits must stay within them.
const (
	DefaultMemoryMaxNotes     = 50
	DefaultMemoryMaxNoteBytes = 500
	MaxMemoryNotes            = 1000
	MaxMemoryNoteBytes        = 4096
	// MaxMemoryScopeID bounds a scope id, in bytes.
	MaxMemoryScopeID = 256
)

// MemoryScope names one set of notes.
type MemoryScope struct {
	AgentID string `json:"agentId"`
	Kind    string `json:"kind"`
	ID      string `json:"id,omitempty"`
}

// String spells the scope for logs and the CLI: "main/agent",
// "main/sender/telegram:42".
func (s MemoryScope) String() string {
	if s.Kind == MemoryAgent {
		return s.AgentID + "/" + s.Kind
	}
	return s.AgentID + "/" + s.Kind + "/" + s.ID
}

// ParseMemoryScope reads what String writes and checks it.
func ParseMemoryScope(v string) (MemoryScope, error) {
	agent, rest, _ := strings.Cut(v, "/")
	kind, id, _ := strings.Cut(rest, "/")
	s := MemoryScope{AgentID: agent, Kind: kind, ID: id}
	if err := CheckMemoryScope(s); err != nil {
		return MemoryScope{}, fmt.Errorf("memory scope %q (want agent/agent, agent/sender/<channel>:<id> or agent/room/<channel>:<chat>): %w", Clip(v), err)
	}
	return s, nil
}

// SenderScope is the scope of one sender of a channel.
func SenderScope(agentID, channel, senderID string) MemoryScope {
	return MemoryScope{AgentID: agentID, Kind: MemorySender, ID: channel + ":" + senderID}
}

// RoomScope is the scope of one group room of a channel.
func RoomScope(agentID, channel, chatID string) MemoryScope {
	return MemoryScope{AgentID: agentID, Kind: MemoryRoom, ID: channel + ":" + chatID}
}

// CheckMemoryScope refuses a scope a store could not keep exactly: an
// invalid agent id, an unknown kind, an agent scope with an id or another
// without one, an id that is not valid UTF-8 without NUL or is too long.
// Nothing of a scope becomes a path (the files backend hashes it).
func CheckMemoryScope(s MemoryScope) error {
	switch {
	case !routing.ValidID(s.AgentID):
		return fmt.Errorf("agent id %q is not valid", Clip(s.AgentID))
	case s.Kind != MemoryAgent && s.Kind != MemorySender && s.Kind != MemoryRoom:
		return fmt.Errorf("unknown scope kind %q (want %s, %s or %s)", Clip(s.Kind), MemoryAgent, MemorySender, MemoryRoom)
	case s.Kind == MemoryAgent && s.ID != "":
		return fmt.Errorf("an agent scope takes no id (got %q)", Clip(s.ID))
	case s.Kind != MemoryAgent && s.ID == "":
		return fmt.Errorf("a %s scope needs an id", s.Kind)
	case len(s.ID) > MaxMemoryScopeID:
		return fmt.Errorf("scope id of %d bytes: at most %d", len(s.ID), MaxMemoryScopeID)
	case !utf8.ValidString(s.ID) || strings.IndexByte(s.ID, 0) >= 0:
		return fmt.Errorf("scope id %q is not valid UTF-8 without NUL bytes", Clip(s.ID))
	}
	return nil
}

// MemoryNote is one note.
type MemoryNote struct {
	ID        int64     `json:"id"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// MemoryScopeInfo describes a scope that holds notes.
type MemoryScopeInfo struct {
	Scope     MemoryScope `json:"scope"`
	Notes     int         `json:"notes"`
	Bytes     int         `json:"bytes"`
	UpdatedAt time.Time   `json:"updatedAt"`
}

// MemoryLimits bound a scope's notes.
type MemoryLimits struct {
	MaxNotes     int `mapstructure:"maxNotes" json:"maxNotes"`
	MaxNoteBytes int `mapstructure:"maxNoteBytes" json:"maxNoteBytes"`
}

// WithDefaults fills zero limits with the defaults.
func (l MemoryLimits) WithDefaults() MemoryLimits {
	if l.MaxNotes == 0 {
		l.MaxNotes = DefaultMemoryMaxNotes
	}
	if l.MaxNoteBytes == 0 {
		l.MaxNoteBytes = DefaultMemoryMaxNoteBytes
	}
	return l
}

// Validate checks l after WithDefaults.
func (l MemoryLimits) Validate() error {
	var errs []error
	if l.MaxNotes < 1 || l.MaxNotes > MaxMemoryNotes {
		errs = append(errs, fmt.Errorf("maxNotes %d: want 1..%d", l.MaxNotes, MaxMemoryNotes))
	}
	if l.MaxNoteBytes < 1 || l.MaxNoteBytes > MaxMemoryNoteBytes {
		errs = append(errs, fmt.Errorf("maxNoteBytes %d: want 1..%d", l.MaxNoteBytes, MaxMemoryNoteBytes))
	}
	return errors.Join(errs...)
}

// Memory stores the notes. Implementations are safe for concurrent use by
// goroutines and processes (filestore.Memory, pgstore's).
type Memory interface {
	// Notes returns scope's notes in the order they were added (none: an
	// empty slice).
	Notes(ctx context.Context, scope MemoryScope) ([]MemoryNote, error)
	// AddNote stores text as a new note of scope at time at and returns
	// it. A scope already holding lim.MaxNotes notes is a
	// *MemoryFullError; see CheckNoteText for the text.
	AddNote(ctx context.Context, scope MemoryScope, text string, at time.Time, lim MemoryLimits) (MemoryNote, error)
	// UpdateNote replaces the text of note id of scope (ErrNoNote when
	// there is none) and returns it.
	UpdateNote(ctx context.Context, scope MemoryScope, id int64, text string, at time.Time, lim MemoryLimits) (MemoryNote, error)
	// ForgetNote deletes note id of scope (ErrNoNote when there is none).
	ForgetNote(ctx context.Context, scope MemoryScope, id int64) error
	// ForgetScope deletes every note of scope and returns how many.
	ForgetScope(ctx context.Context, scope MemoryScope) (int, error)
	// MemoryScopes lists the scopes holding notes, of agentID ("": every
	// agent), sorted by agent, kind and id.
	MemoryScopes(ctx context.Context, agentID string) ([]MemoryScopeInfo, error)
}

// ErrNoNote is wrapped by the error for a note that does not exist.
var ErrNoNote = errors.New("no such note")

// ErrBadNote matches the error for a note refused for its text (empty,
// too long, not valid UTF-8 without NUL): the caller's to fix.
var ErrBadNote = errors.New("bad note")

// badNote is a note refused for its text; it is ErrBadNote.
type badNote string

func (b badNote) Error() string      { return string(b) }
func (badNote) Is(target error) bool { return target == ErrBadNote }

// MemoryFullError is a write refused because its scope holds its limit.
type MemoryFullError struct {
	Scope MemoryScope
	Max   int
}

func (e *MemoryFullError) Error() string {
	return fmt.Sprintf("memory %s holds its limit of %d notes: update or forget a note first", e.Scope, e.Max)
}

// NoteTooLongError is a note refused for its size.
type NoteTooLongError struct {
	Bytes, Max int
}

func (e *NoteTooLongError) Error() string {
	return fmt.Sprintf("note of %d bytes: at most %d bytes; shorten it or split it", e.Bytes, e.Max)
}

// Is makes a NoteTooLongError an ErrBadNote.
func (e *NoteTooLongError) Is(target error) bool { return target == ErrBadNote }

// CheckNoteText refuses a note that is empty (after trimming), longer
// than lim.MaxNoteBytes (a *NoteTooLongError) or not valid UTF-8 without
// NUL bytes. Stores call it; callers may call it first for a better
// message.
func CheckNoteText(text string, lim MemoryLimits) error {
	lim = lim.WithDefaults()
	switch {
	case strings.TrimSpace(text) == "":
		return badNote("empty note")
	case len(text) > lim.MaxNoteBytes:
		return &NoteTooLongError{Bytes: len(text), Max: lim.MaxNoteBytes}
	case !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0:
		return badNote("note is not valid UTF-8 without NUL bytes")
	}
	return nil
}

// CheckMemoryWrite is the check every store makes before a write: the
// scope, the limits and the text.
func CheckMemoryWrite(scope MemoryScope, text string, lim MemoryLimits) (MemoryLimits, error) {
	if err := CheckMemoryScope(scope); err != nil {
		return lim, fmt.Errorf("memory: %w", err)
	}
	lim = lim.WithDefaults()
	if err := lim.Validate(); err != nil {
		return lim, fmt.Errorf("memory: limits: %w", err)
	}
	if err := CheckNoteText(text, lim); err != nil {
		return lim, fmt.Errorf("memory %s: %w", scope, err)
	}
	return lim, nil
}
