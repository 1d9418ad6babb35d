package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

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
func EncodeMessage(id, parentID string, m sessions.Message, now time.Time) ([]byte, sessions.Message, error) {
	var buf bytes.Buffer
	m, err := encodeMessageEntry(&buf, id, parentID, m, now)
	if err != nil {
		return nil, sessions.Message{}, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), m, nil
}

// EncodeCompaction returns the compaction entry line of c (without the
// trailing newline). parentID "" is JSON null.
func EncodeCompaction(id, parentID string, c sessions.Compaction, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeCompactionEntry(&buf, id, parentID, c, now); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func encodeHeader(buf *bytes.Buffer, sessionID string, h Header, now time.Time) error {
	out := outHeader{Type: entrySession, Version: transcriptVersion, ID: sessionID,
		Timestamp: formatTimestamp(now), Cwd: h.Cwd, SessionKey: h.SessionKey, AgentID: h.AgentID}
	if err := appendJSONLine(buf, out); err != nil {
		return fmt.Errorf("transcript: encode header: %w", err)
	}
	return nil
}

func encodeMessageEntry(buf *bytes.Buffer, id, parentID string, m sessions.Message, now time.Time) (sessions.Message, error) {
	m, err := normalizeForWrite(m, now)
	if err != nil {
		return sessions.Message{}, fmt.Errorf("transcript: append: %w", err)
	}
	if err := appendJSONLine(buf, outMessageEntry{
		Type: entryMessage, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now), Message: toOutMessage(m),
		RecordIDs: m.RecordIDs, HistorySeq: m.HistorySeq,
	}); err != nil {
		return sessions.Message{}, fmt.Errorf("transcript: encode message: %w", err)
	}
	return m, nil
}

func encodeCompactionEntry(buf *bytes.Buffer, id, parentID string, c sessions.Compaction, now time.Time) error {
	if err := appendJSONLine(buf, outCompactionEntry{
		Type: entryCompaction, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now),
		Summary: c.Summary, FirstKeptEntryID: c.FirstKeptEntryID, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
	}); err != nil {
		return fmt.Errorf("transcript: encode compaction: %w", err)
	}
	return nil
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

type outMessageEntry struct {
	Type      string     `json:"type"`
	ID        string     `json:"id"`
	ParentID  *string    `json:"parentId"`
	Timestamp string     `json:"timestamp"`
	Message   outMessage `json:"message"`
	// RecordIDs is a gateway extension pi ignores (sessions.Message.RecordIDs).
	RecordIDs []string `json:"recordIds,omitempty"`
	// HistorySeq is a gateway extension pi ignores (sessions.Message.HistorySeq).
	HistorySeq uint64 `json:"historySeq,omitempty"`
}

type outCompactionEntry struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	ParentID         *string `json:"parentId"`
	Timestamp        string  `json:"timestamp"`
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId"`
	TokensBefore     int64   `json:"tokensBefore"`
	TokensAfter      int64   `json:"tokensAfter,omitempty"`
}

// outMessage is sessions.Message as pi expects it: assistant messages
// always carry usage (with the cost block pi's totals read, zero when
// unpriced) and a stop reason, and tool results always say isError.
type outMessage struct {
	Role       string             `json:"role"`
	Content    []sessions.Content `json:"content"`
	ToolCallID string             `json:"toolCallId,omitempty"`
	ToolName   string             `json:"toolName,omitempty"`
	IsError    *bool              `json:"isError,omitempty"`
	Provider   string             `json:"provider,omitempty"`
	Model      string             `json:"model,omitempty"`
	Usage      *sessions.Usage    `json:"usage,omitempty"`
	StopReason string             `json:"stopReason,omitempty"`
	Timestamp  int64              `json:"timestamp"`
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

// toOutMessage maps a normalised message to its line shape: tool results
// always say isError, assistant usage carries the cost block pi sums.
func toOutMessage(m sessions.Message) outMessage {
	o := outMessage{
		Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName,
		Provider: m.Provider, Model: m.Model, StopReason: m.StopReason, Timestamp: m.Timestamp,
	}
	switch m.Role {
	case sessions.RoleToolResult:
		isErr := m.IsError
		o.IsError = &isErr
	case sessions.RoleAssistant:
		if m.Usage != nil {
			u := *m.Usage
			o.Usage = &u
		}
	}
	return o
}

// appendJSONLine encodes v without HTML escaping and appends it plus '\n'.
func appendJSONLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v) // Encode appends '\n'
}

func formatTimestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
