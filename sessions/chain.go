package sessions

import (
	"bytes"
	"fmt"
	"github.com/google/uuid"
	"time"
)

// This file exports the transcript's pure logic (no I/O) so that every
// backend of TranscriptLog writes the same entry bytes and rebuilds the same
// context, history and recovery state from them: the files backend uses it
// on lines of a JSONL file, the PostgreSQL backend on rows.

// NewEntryID renders r as an entry id: 8 lower-case hex characters, as pi
// writes them. Callers draw r at random and retry on a collision with an
// id of the same transcript.
func NewEntryID(r uint32) string { return fmt.Sprintf("%08x", r) }

// EncodeHeader returns the session line that starts a transcript written
// at now (without the trailing newline).
func EncodeHeader(sessionID string, h Header, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeHeader(&buf, sessionID, h, now); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// EncodeMessage normalises m as Append does (timestamp, usage, stop
// reason, compact tool arguments) and returns its message entry line
// (without the trailing newline) and the normalised message, which equals
// what decoding the line gives. parentID "" is JSON null.
func EncodeMessage(id, parentID string, m Message, now time.Time) ([]byte, Message, error) {
	var buf bytes.Buffer
	m, err := encodeMessageEntry(&buf, id, parentID, m, now)
	if err != nil {
		return nil, Message{}, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), m, nil
}

// EncodeCompaction returns the compaction entry line of c (without the
// trailing newline). parentID "" is JSON null.
func EncodeCompaction(id, parentID string, c Compaction, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeCompactionEntry(&buf, id, parentID, c, now); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func encodeHeader(buf *bytes.Buffer, sessionID string, h Header, now time.Time) error {
	out := outHeader{Type: entrySession, Version: TranscriptVersion, ID: sessionID,
		Timestamp: formatTimestamp(now), Cwd: h.Cwd, SessionKey: h.SessionKey, AgentID: h.AgentID}
	if err := appendJSONLine(buf, out); err != nil {
		return fmt.Errorf("transcript: encode header: %w", err)
	}
	return nil
}

func encodeMessageEntry(buf *bytes.Buffer, id, parentID string, m Message, now time.Time) (Message, error) {
	m, err := normalizeForWrite(m, now)
	if err != nil {
		return Message{}, fmt.Errorf("transcript: append: %w", err)
	}
	if err := appendJSONLine(buf, outMessageEntry{
		Type: entryMessage, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now), Message: toOutMessage(m),
		RecordIDs: m.RecordIDs, HistorySeq: m.HistorySeq,
	}); err != nil {
		return Message{}, fmt.Errorf("transcript: encode message: %w", err)
	}
	return m, nil
}

func encodeCompactionEntry(buf *bytes.Buffer, id, parentID string, c Compaction, now time.Time) error {
	if err := appendJSONLine(buf, outCompactionEntry{
		Type: entryCompaction, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now),
		Summary: c.Summary, FirstKeptEntryID: c.FirstKeptEntryID, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
	}); err != nil {
		return fmt.Errorf("transcript: encode compaction: %w", err)
	}
	return nil
}

// ErrNotInChain is wrapped by AppendCompaction's error when the first kept
// entry is not an entry of the current chain.
var ErrNotInChain = notInChain{}

type notInChain struct{}

func (notInChain) Error() string { return "not in the chain" }

// errNotInChain is AppendCompaction's refusal of firstKept, the same text
// for every backend.
func errNotInChain(firstKept string) error {
	return fmt.Errorf("transcript: compaction: first kept entry %q is %w", firstKept, ErrNotInChain)
}

// ErrFirstKeptNotInChain returns AppendCompaction's refusal of firstKept
// (wrapping ErrNotInChain): every backend refuses with the same text.
func ErrFirstKeptNotInChain(firstKept string) error { return errNotInChain(firstKept) }

// Chain is a set of decoded transcript entries and the chain through them
// that ends at the leaf, the entry added at the highest position (SPEC
// §3.4). It holds the transcript's pure logic: Context, History and
// Records give what the files backend gives for the same entries. A Chain
// is not safe for concurrent use.
type Chain struct {
	st *fileState
}

// NewChain returns an empty chain. complete says whether the entries to be
// added start at the beginning of the transcript; when they do not, a
// chain walk that needs an entry not added makes Context report !ok, so
// the caller reads more and tries again.
func NewChain(complete bool) *Chain {
	st := newFileState(nil)
	if !complete {
		st.lo = 1 // resolve: entries precede lo and are not loaded
	}
	return &Chain{st: st}
}

// Add decodes one entry (one line of the JSONL, without its newline) found
// at pos; positions grow in the order entries were written (byte offset,
// sequence number) and must be >= 0. A session header or a blank line is
// ignored; an entry whose JSON cannot be read is an error.
func (c *Chain) Add(line []byte, pos int64) error {
	n, err := ParseEntry(line, pos)
	if err != nil {
		return fmt.Errorf("transcript: entry at %d: %w", pos, err)
	}
	if n != nil {
		c.st.add(n)
	}
	return nil
}

// Leaf is the id of the chain's last entry ("" when none was added).
func (c *Chain) Leaf() string { return c.st.leaf }

// Messages is the number of message entries added (what Stats counts).
func (c *Chain) Messages() int { return c.st.msgs }

// Context rebuilds what the model is sent from the chain ending at the
// leaf: the latest compaction's summary, the entries it kept and those
// after it. ok is false when the chain needs an entry that was not added
// (and the chain is not complete).
func (c *Chain) Context() (ctx Context, ok bool) {
	v, more := c.st.resolve()
	if more {
		return Context{}, false
	}
	built := buildContext(v, c.st.leaf)
	return copyContext(&built), true // nil slices when empty, as Transcript.Context gives
}

// History is every message of the chain ending at the leaf, compactions
// ignored, as far back as the entries added reach.
func (c *Chain) History() []Message { return c.st.history() }

// Records is TranscriptLog.Records over the entries added: the caller adds
// at least the chain's last recordsLookback (RecordsLookback) entries.
func (c *Chain) Records(ids []string) RecordsState { return recordsOf(c.st.nodes, c.st.leaf, ids) }

// RecordsLookback is how many entries back from the leaf Records looks.
const RecordsLookback = recordsLookback

// CheckSessionID accepts only a canonical lower-case UUID, the form of
// every session id (so a hostile id never reaches a path or a query).
func CheckSessionID(id string) error { return checkSessionID(id) }

// checkSessionID accepts only canonical lower-case UUID strings, so a session
// id can be joined to a directory without escaping it.
func checkSessionID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("sessions: session id %q is not a canonical UUID", Clip(id))
	}
	return nil
}

// Clip shortens hostile input before it is quoted in an error.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
