package sessions

import (
	"context"
	"slices"
	"time"
)

// Moving a state between backends (`gateway storage migrate`, SPEC §3.8)
// goes through the two small interfaces below, which both backends
// implement: the files backend (Manager.Transfer) and PostgreSQL
// (pgstore.DB.Transfer). Package sessions/transfer drives them (Copy,
// Compare); nothing above them knows a backend.
//
// The unit of transfer is one session key of one agent (KeyState): its
// current entry, its archived sessions and the transcript of each, line
// by line as the files backend writes them (SPEC §3.4), so a transcript
// moved to PostgreSQL and back is byte-identical.
//
// Times: PostgreSQL keeps microseconds, the files backend nanoseconds.
// AtMicros cuts every clock of an entry and of an archived session to UTC
// microseconds; a migration writes and compares at that resolution.
// A state written from PostgreSQL to files therefore carries microsecond
// clocks; one moved from files to PostgreSQL loses the nanoseconds, which
// nothing reads (the reset rules work in minutes). Transcript timestamps
// are text inside the lines and move unchanged.
//
// The ingress journal's pending records and unsent replies, pairing,
// channel cursors, room history and the usage ledger are not part of these
// interfaces: they move through the seam's own interfaces on both sides
// (Delivery, PairingState, Cursors with CursorScopes, RoomLog with
// RoomLister, UsageLog).

// KeyState is one session key of an agent as a migration moves it.
type KeyState struct {
	// Key is the session key (routing.Key.String()).
	Key string
	// Entry is the key's current session; nil when the key has only
	// archived sessions (it was deleted).
	Entry *Entry
	// Archived are the key's archived sessions, newest first. File (the
	// files backend's archived transcript name) is "" when the source does
	// not have one; the files importer names it then.
	Archived []Archived
}

// TranscriptRef names one transcript of a KeyState: the current session's
// (File "") or an archived one's (File is Archived.File, possibly "").
type TranscriptRef struct {
	SessionID string
	File      string
}

// Refs lists the transcripts of k: the current session's first, then the
// archived ones, newest first.
func (k KeyState) Refs() []TranscriptRef {
	refs := make([]TranscriptRef, 0, 1+len(k.Archived))
	if k.Entry != nil {
		refs = append(refs, TranscriptRef{SessionID: k.Entry.SessionID})
	}
	for _, a := range k.Archived {
		refs = append(refs, TranscriptRef{SessionID: a.SessionID, File: a.File})
	}
	return refs
}

// Exporter reads a whole state for a migration. It is used while no
// daemon writes the state (the caller holds the backend's daemon lock).
type Exporter interface {
	// Kind names the backend: "files" or "postgres".
	Kind() string
	// ExportAgents lists the agents with stored sessions (current or
	// archived), sorted.
	ExportAgents(ctx context.Context) ([]string, error)
	// ExportKeys returns every session key of agentID, sorted by key.
	ExportKeys(ctx context.Context, agentID string) ([]KeyState, error)
	// ExportTranscript returns the lines of one transcript of agentID, in
	// order, each without its newline: the JSONL the files backend writes.
	// A transcript that does not exist has no lines (nil, nil).
	ExportTranscript(ctx context.Context, agentID string, ref TranscriptRef) ([][]byte, error)
}

// KeyCopy is what an Importer writes for one key: its state and the lines
// of its transcripts by session id.
type KeyCopy struct {
	KeyState
	Transcripts map[string][][]byte
}

// Importer writes a state for a migration; it reads back through its
// Exporter (idempotence checks and verification).
type Importer interface {
	Exporter
	// ImportKey makes agentID's key k.Key exactly k: the entry replaced
	// (or removed when k.Entry is nil), the archived sessions replaced,
	// and each transcript in k.Transcripts replaced line for line,
	// atomically or in an order where a crash leaves nothing an entry
	// names missing. It is durable when it returns, or, for a Syncer,
	// after Sync. Safe for concurrent use on different keys.
	ImportKey(ctx context.Context, agentID string, k KeyCopy) error
}

// Syncer is implemented by an Importer whose ImportKey is not durable by
// itself: sessions/transfer's Copy calls Sync once after the last key.
type Syncer interface {
	Sync(ctx context.Context) error
}

// AtMicros returns e with its clocks in UTC at microsecond resolution,
// the resolution PostgreSQL keeps.
func (e Entry) AtMicros() Entry {
	e.CreatedAt, e.SessionStartedAt = micros(e.CreatedAt), micros(e.SessionStartedAt)
	e.LastInteractionAt, e.UpdatedAt = micros(e.LastInteractionAt), micros(e.UpdatedAt)
	return e
}

// AtMicros returns a with its clocks in UTC at microsecond resolution.
func (a Archived) AtMicros() Archived {
	a.ArchivedAt, a.SessionStartedAt, a.UpdatedAt = micros(a.ArchivedAt), micros(a.SessionStartedAt), micros(a.UpdatedAt)
	return a
}

func micros(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// AtMicros returns k with every clock at microsecond resolution (UTC).
func (k KeyState) AtMicros() KeyState {
	if k.Entry != nil {
		e := k.Entry.AtMicros()
		k.Entry = &e
	}
	k.Archived = slices.Clone(k.Archived)
	for i := range k.Archived {
		k.Archived[i] = k.Archived[i].AtMicros()
	}
	return k
}
