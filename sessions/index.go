package sessions

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
)

// Index is one agent's session index: each session key's current Entry,
// and the sessions of a key that were reset, deleted or switched away from
// (SPEC §3.2, §3.3, §3.6). It is the storage seam of the index (SPEC
// §3.8): the files backend (*Store, sessions.json) and the PostgreSQL
// backend (pgstore.Store) implement it, and package sessionstest holds the
// conformance suite both pass. An Index is safe for concurrent use.
//
// Begin, Reset, Patch, Delete, DeleteArchived, Switch and RenameKey are
// durable when they return.
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
	// DeleteArchived marks the archived session sessionID of key deleted
	// (reason "deleted", Deleted true), as Delete marks a current one: the
	// chat no longer offers it (/sessions, /switch), its transcript is
	// kept, it stays in Archived(key) and Switch can still bring it back
	// (an operator's recovery). A session already deleted is left as it
	// is. ErrNotFound when Archived(key) does not list sessionID.
	DeleteArchived(ctx context.Context, key routing.Key, sessionID string) error

	// RenameKey moves the session of key from to key to (both of this
	// index's agent, and different): the entry — session id, transcript,
	// clocks, counters, overrides, label — and from's archived sessions
	// now belong to to, and from has no session. It is for a conversation
	// whose platform id changed (a Telegram group upgraded to a
	// supergroup). It is atomic and durable when it returns: a reader, or
	// a crash at any instant, sees the session under exactly one of the
	// two keys. It is idempotent, so a caller repeats it after a crash or
	// a redelivered event: when from has no session and to has one (the
	// move was done, or to's own), it changes nothing and returns to's
	// entry. It refuses, changing nothing, with ErrKeyTaken when both keys
	// have a session (to's conversation started before the move), and
	// with ErrNotFound when neither has. Counters added to from before the
	// call move with the session.
	RenameKey(ctx context.Context, from, to routing.Key) (Entry, error)

	// AddCounters adds usage to key's current session without moving
	// lastInteractionAt. It never fails the caller: a key without a
	// session, or a store that cannot be written, is logged and skipped.
	AddCounters(key routing.Key, c Counters)
	// Flush makes the routine updates made so far durable.
	Flush(ctx context.Context) error
}

// The rules below build and update entries. Every backend of Index uses
// them, so a session created, rolled over or touched looks the same in
// sessions.json and in a database row (SPEC §3.2, §3.6).

// NewEntry is the entry of key's first session, created for the inbound
// message o at now: a fresh session id, the three clocks at now (the idle
// clock at o.At), the origin recorded and, for a subagent key, the parent
// that spawned it.
func NewEntry(key routing.Key, o Origin, now time.Time) Entry {
	o = o.Clean()
	e := Entry{
		SessionKey: key.String(), SessionID: uuid.NewString(),
		CreatedAt: now, SessionStartedAt: now, LastInteractionAt: StartInteraction(o, now), UpdatedAt: now,
	}
	if key.IsSubagent() {
		e.SpawnedBy = o.ParentKey
	}
	ApplyOrigin(&e, o)
	return e
}

// StartInteraction is the lastInteractionAt of a session that starts at
// now for the message o (created, or rolled over by Begin): the message's
// time, but never before now. A message of a backlog (sent while the
// gateway was down, or while an earlier turn ran) carries its platform
// time, which may be hours old: a new session whose idle clock started
// then would be stale at once, and the backlog's next message would roll
// it over again, taking the first message's context with it.
func StartInteraction(o Origin, now time.Time) time.Time {
	if o.At.After(now) {
		return o.At
	}
	return now
}

// JudgedAt is the instant Begin evaluates the reset policy at for the
// message o when its clock reads now: the earlier of o.At (when the
// platform says the message was sent) and o.Arrived (when the gateway
// accepted it), ignoring either when it is zero or later than now. A
// message sent ten minutes after the last one keeps its session even when
// a gateway that was down received it hours later (Telegram's backlog
// after a restart): the idle clock it is compared with, lastInteractionAt,
// is the platform's time of the previous message too.
func (o Origin) JudgedAt(now time.Time) time.Time {
	at := now
	for _, t := range [...]time.Time{o.At, o.Arrived} {
		if !t.IsZero() && t.Before(at) {
			at = t
		}
	}
	return at
}

// RolledOver is the entry that replaces old when its key starts a new
// session at now (SPEC §3.6): a fresh session id; counters, compactions and
// the title cleared; label, display name, lineage and where replies go
// kept (the delivery context too), and so are the group activation (how
// the room addresses the bot), the send policy, the verbose, reasoning and
// usage settings and a subagent's spawn options (not its run's start);
// model, thinking and queue overrides kept only on a manual reset (/new,
// /reset, a switch). A model, when given, becomes the model override.
func RolledOver(old Entry, manual bool, model string, now time.Time) Entry {
	n := Entry{
		SessionKey: old.SessionKey, SessionID: uuid.NewString(),
		CreatedAt: old.CreatedAt, SessionStartedAt: now, LastInteractionAt: now, UpdatedAt: now,
		Channel: old.Channel, ChatType: old.ChatType, LastChannel: old.LastChannel, LastTo: old.LastTo,
		LastAccountID: old.LastAccountID, LastThreadID: old.LastThreadID, LastFrom: old.LastFrom,
		DisplayName: old.DisplayName, SpawnedBy: old.SpawnedBy, ParentSessionKey: old.ParentSessionKey,
		Label: old.Label, GroupActivation: old.GroupActivation, SendPolicy: old.SendPolicy,
		VerboseLevel: old.VerboseLevel, ReasoningLevel: old.ReasoningLevel, ResponseUsage: old.ResponseUsage,
		DeliveryContext: old.DeliveryContext, SubagentCleanup: old.SubagentCleanup, RunTimeoutSeconds: old.RunTimeoutSeconds,
	}
	if manual {
		n.ModelOverride, n.ProviderOverride, n.ThinkingLevel = old.ModelOverride, old.ProviderOverride, old.ThinkingLevel
		n.QueueMode, n.QueueDebounceMs, n.QueueCap, n.QueueDrop = old.QueueMode, old.QueueDebounceMs, old.QueueCap, old.QueueDrop
	}
	if model != "" {
		n.ModelOverride, n.ProviderOverride = model, ""
	}
	return n
}

// ApplyOrigin records in e where the latest inbound message came from:
// the last channel, thread, chat, account, sender and display name follow
// the message; the first channel and chat type, the parent key and the
// title (from the first message) are set once. Empty fields of o leave e
// as it is. The clocks are the caller's.
func ApplyOrigin(e *Entry, o Origin) {
	o = o.Clean()
	if o.Channel != "" {
		e.LastChannel = o.Channel
		e.LastThreadID = o.ThreadID
		if e.Channel == "" {
			e.Channel = o.Channel
		}
	}
	if o.ChatType != "" && e.ChatType == "" {
		e.ChatType = o.ChatType
	}
	if o.To != "" {
		e.LastTo = o.To
	}
	if o.AccountID != "" {
		e.LastAccountID = o.AccountID
	}
	if o.From != "" {
		e.LastFrom = o.From
	}
	if o.Name != "" {
		e.DisplayName = o.Name
	}
	if o.ParentKey != "" && e.ParentSessionKey == "" {
		e.ParentSessionKey = o.ParentKey
	}
	if e.Title == "" {
		e.Title = MakeTitle(o.Title)
	}
}

// Clean returns o with its text made storable by every backend: invalid
// UTF-8 becomes U+FFFD (as sessions.json's JSON encoding writes it) and NUL
// bytes, which PostgreSQL text cannot hold, are dropped. A display name
// from a chat is data, never a reason to fail a message.
func (o Origin) Clean() Origin {
	for _, f := range []*string{&o.Channel, &o.ChatType, &o.AccountID, &o.To, &o.ThreadID, &o.From, &o.Name, &o.Title, &o.ParentKey} {
		*f = cleanText(*f)
	}
	return o
}

// Clean returns d with its text made storable by every backend, as
// Origin.Clean does.
func (d DeliveryContext) Clean() DeliveryContext {
	for _, f := range []*string{&d.Channel, &d.To, &d.AccountID, &d.ThreadID} {
		*f = cleanText(*f)
	}
	return d
}

func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// titleRunes is how many characters of the first message become the title.
const titleRunes = 30

// MakeTitle turns a first message into a session title: whitespace runs
// become one space, and the first 30 characters are kept.
func MakeTitle(text string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range strings.TrimSpace(text) {
		if n >= titleRunes {
			break
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if !unicode.IsPrint(r) {
			continue
		}
		if space && n > 0 {
			b.WriteByte(' ')
			n++
			if n >= titleRunes {
				break
			}
		}
		space = false
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// StoredTitle is the title of a session rebuilt from its transcript's
// first user message: MakeTitle of the text without the "[message_id: N] "
// prefix the message tool puts before stored user text (what the live
// title, made from the inbound text, never had).
func StoredTitle(text string) string {
	t := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(t, "[message_id: "); ok {
		if _, after, found := strings.Cut(rest, "]"); found {
			t = after
		}
	}
	return MakeTitle(t)
}

// ErrNotFound is returned when a session key or id is unknown.
var ErrNotFound = errors.New("session not found")

// ErrKeyTaken is wrapped by RenameKey's error when the key to move a
// session to already has a session of its own.
var ErrKeyTaken = errors.New("session key already has a session")

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
	// At is when the message was sent, by the platform's clock (the
	// idle clock's reading, lastInteractionAt); zero is Begin's clock.
	At time.Time
	// Arrived is when the gateway accepted the message (its journal
	// record's AcceptedAt, by the gateway's clock). Begin judges the reset
	// policy at that instant, not when the message's turn starts: a
	// message that arrived before 04:00 and waited behind a turn running
	// across it, or in the journal across a restart, stays in the session
	// it arrived in (SPEC §3.6, "evaluated when the next message arrives").
	// At, when earlier, is judged instead (JudgedAt): the message arrived
	// on its platform then. Zero, or later than Begin's clock: the clock at
	// Begin.
	Arrived time.Time
	// Internal marks work of the agent runtime (a subagent's announcement):
	// it is not user or channel input, so it does not move
	// lastInteractionAt (the idle reset's clock, SPEC §3.2).
	Internal bool
}

// BeginInfo says what Begin did.
type BeginInfo struct {
	Created bool
	// ResetReason is "daily", "idle" or "" when the previous session was kept.
	ResetReason string
	Previous    string // archived session id on reset
	// ExpiredAt is when the previous session expired (on an automatic reset).
	ExpiredAt time.Time
}

// ResetOptions tunes a manual or timed reset.
type ResetOptions struct {
	Manual bool   // /new, /reset: keeps model and queue overrides
	Model  string // /new <model>
	Reason string
}

// Counters is a coalesced counter update.
type Counters struct {
	InputTokens, OutputTokens, TotalTokens int64
	ContextTokens                          int64 // absolute, 0 leaves it
	Messages                               int
	Model, Provider                        string
}

// MaxArchivedPerKey bounds the archived-session history kept per key.
const MaxArchivedPerKey = 20

// Archived is a session of a key that was reset, deleted or switched away
// from. Its transcript lives on as File in the store directory until the
// archive retention expires.
type Archived struct {
	SessionID        string    `json:"sessionId"`
	Reason           string    `json:"reason"` // daily, idle, manual (or the command), deleted, switch, pruned
	ArchivedAt       time.Time `json:"archivedAt"`
	File             string    `json:"file"` // base name of the archived transcript
	Title            string    `json:"title,omitempty"`
	SessionStartedAt time.Time `json:"sessionStartedAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	MessageCount     int       `json:"messageCount,omitempty"`
	TotalTokens      int64     `json:"totalTokens,omitempty"`
	Deleted          bool      `json:"deleted,omitempty"`
}
