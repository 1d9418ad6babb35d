package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
)

// Writing transcript lines (pi-coding-agent SessionManager, version 3):
// every backend of sessions.TranscriptLog writes the same entry bytes (the
// files backend as lines of a JSONL file, the PostgreSQL backend as rows),
// in the shapes pi reads without migration. Reading them back is wire.go.

// transcriptVersion is the version written in new transcript headers.
const transcriptVersion = 3

// timestampLayout is JavaScript's Date.toISOString, as pi writes it.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Header is what the session line records about who owns a transcript.
type Header struct {
	SessionKey string
	AgentID    string
	Cwd        string
}

// NewEntryID renders r as an entry id: 8 lower-case hex characters, as pi
// writes them. Callers draw r at random and retry on a collision with an
// id of the same transcript.
func NewEntryID(r uint32) string {
	const hexDigits = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = hexDigits[r&0xF]
		r >>= 4
	}
	return string(b[:])
}

// EncodeHeader returns the session line that starts a transcript written
// at now (without the trailing newline): encodeHeader's line, built by
// hand, as the database backends send it with every append (issue 21).
func EncodeHeader(sessionID string, h Header, now time.Time) ([]byte, error) {
	return appendHeaderLine(make([]byte, 0, 96+len(sessionID)+len(h.Cwd)+len(h.SessionKey)+len(h.AgentID)), sessionID, h, now), nil
}

// appendHeaderLine appends the session line of encodeHeader (outHeader's
// fields, in its order) without its newline to dst.
func appendHeaderLine(dst []byte, sessionID string, h Header, now time.Time) []byte {
	dst = append(dst, `{"type":"`+entrySession+`","version":`...)
	dst = strconv.AppendInt(dst, transcriptVersion, 10)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, sessionID)
	dst = append(dst, `,"timestamp":`...)
	dst = appendTimestamp(dst, now)
	dst = append(dst, `,"cwd":`...)
	dst = appendJSONString(dst, h.Cwd)
	if h.SessionKey != "" {
		dst = append(dst, `,"sessionKey":`...)
		dst = appendJSONString(dst, h.SessionKey)
	}
	if h.AgentID != "" {
		dst = append(dst, `,"agentId":`...)
		dst = appendJSONString(dst, h.AgentID)
	}
	return append(dst, '}')
}

// EncodeMessage normalises m as Append does (timestamp, usage, stop
// reason, compact tool arguments) and returns its message entry line
// (without the trailing newline) and the normalised message, which equals
// what decoding the line gives. parentID "" is JSON null.
func EncodeMessage(id, parentID string, m sessions.Message, now time.Time) ([]byte, sessions.Message, error) {
	line, m, err := appendMessageEntry(nil, id, parentID, m, now)
	if err != nil {
		return nil, sessions.Message{}, err
	}
	return line[:len(line)-1], m, nil
}

// EncodeCompaction returns the compaction entry line of c (without the
// trailing newline). parentID "" is JSON null.
func EncodeCompaction(id, parentID string, c sessions.Compaction, now time.Time) ([]byte, error) {
	line := appendCompactionLine(nil, id, parentID, &c, now)
	return line[:len(line)-1], nil
}

func encodeHeader(buf *bytes.Buffer, sessionID string, h Header, now time.Time) error {
	out := outHeader{Type: entrySession, Version: transcriptVersion, ID: sessionID,
		Timestamp: formatTimestamp(now), Cwd: h.Cwd, SessionKey: h.SessionKey, AgentID: h.AgentID}
	if err := appendJSONLine(buf, out); err != nil {
		return fmt.Errorf("transcript: encode header: %w", err)
	}
	return nil
}

// appendMessageEntry normalises m (normalizeForWrite) and appends its
// entry line and '\n' to dst.
func appendMessageEntry(dst []byte, id, parentID string, m sessions.Message, now time.Time) ([]byte, sessions.Message, error) {
	m, err := normalizeForWrite(m, now)
	if err != nil {
		return nil, sessions.Message{}, fmt.Errorf("transcript: append: %w", err)
	}
	out, err := appendMessageLine(dst, id, parentID, &m, now)
	if err != nil {
		return nil, sessions.Message{}, err
	}
	return out, m, nil
}

// Output shapes. Field order follows pi's so files diff cleanly.

type outHeader struct {
	Type       string `json:"type"`
	Version    int    `json:"version"`
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	SessionKey string `json:"sessionKey,omitempty"`
	AgentID    string `json:"agentId,omitempty"`
}

// normalizeForWrite applies what a written line will say, so the message
// kept in memory equals the one a reload reads: a timestamp, non-nil
// content, compact tool arguments ({} when empty), and for assistant
// messages a usage block and a stop reason.
func normalizeForWrite(m sessions.Message, now time.Time) (sessions.Message, error) {
	if m.Timestamp == 0 {
		m.Timestamp = now.UnixMilli()
	}
	if m.Content == nil {
		m.Content = []sessions.Content{}
	}
	copied := false
	for i, c := range m.Content {
		if c.Type != sessions.BlockToolCall {
			continue
		}
		if !copied {
			m.Content, copied = append([]sessions.Content(nil), m.Content...), true
		}
		if len(bytes.TrimSpace(c.Arguments)) == 0 {
			m.Content[i].Arguments = json.RawMessage("{}")
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, c.Arguments); err != nil {
			return sessions.Message{}, fmt.Errorf("tool call %q arguments: %w", c.ID, err)
		}
		m.Content[i].Arguments = b.Bytes()
	}
	if m.Role == sessions.RoleAssistant {
		if m.Usage == nil {
			m.Usage = &sessions.Usage{}
		}
		if m.StopReason == "" {
			m.StopReason = "stop"
			if hasToolCall(m) {
				m.StopReason = "toolUse"
			}
		}
	}
	return m, nil
}

// appendJSONLine encodes v without HTML escaping and appends it plus '\n'.
func appendJSONLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v) // Encode appends '\n'
}

func formatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// MessageRoundTrips reports whether decoding the line EncodeMessage wrote
// for a message gives back m, the normalised message it returned: what an
// appender may keep instead of decoding the line again (Chain.AddMessage).
// It holds for what the gateway writes; it does not for a role read as
// another (pi's custom and bash messages), a field the line leaves out
// (usage off an assistant message, isError off a tool result, arguments
// off a tool call, an empty but non-nil record list), invalid UTF-8 (the
// line holds U+FFFD instead), or a timestamp past float64's integers.
func MessageRoundTrips(m *sessions.Message) bool {
	switch m.Role {
	case sessions.RoleUser, sessions.RoleAssistant, sessions.RoleToolResult:
	default:
		return false
	}
	if (m.Usage != nil && m.Role != sessions.RoleAssistant) || (m.IsError && m.Role != sessions.RoleToolResult) ||
		(m.RecordIDs != nil && len(m.RecordIDs) == 0) || m.Timestamp > 1<<53 ||
		m.Timestamp < -(1<<53) {
		return false
	}
	valid := utf8.ValidString
	if !valid(m.ToolCallID) || !valid(m.ToolName) || !valid(m.Provider) || !valid(m.Model) || !valid(m.StopReason) {
		return false
	}
	for _, r := range m.RecordIDs {
		if !valid(r) {
			return false
		}
	}
	for i := range m.Content {
		c := &m.Content[i]
		if (c.Arguments != nil) != (c.Type == sessions.BlockToolCall) {
			return false // normalizeForWrite sets a tool call's, compacted
		}
		if !valid(c.Type) || !valid(c.Text) || !valid(c.Thinking) || !valid(c.Signature) || !valid(c.ID) ||
			!valid(c.Name) || !valid(c.Data) || !valid(c.MimeType) {
			return false
		}
	}
	return true
}
