package transcript

import (
	"bytes"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// The reflection encoder the hand-written one (encode_line.go) replaced,
// kept as the reference its output must equal byte for byte.

// refEncodeMessage is EncodeMessage as json.Encoder wrote it.
func refEncodeMessage(id, parentID string, m sessions.Message, now time.Time) ([]byte, sessions.Message, error) {
	m, err := normalizeForWrite(m, now)
	if err != nil {
		return nil, sessions.Message{}, err
	}
	var buf bytes.Buffer
	if err := appendJSONLine(&buf, outMessageEntry{
		Type: entryMessage, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now), Message: toOutMessage(m),
		RecordIDs: m.RecordIDs, HistorySeq: m.HistorySeq,
	}); err != nil {
		return nil, sessions.Message{}, fmt.Errorf("encode message: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), m, nil
}

// refEncodeCompaction is EncodeCompaction as json.Encoder wrote it.
func refEncodeCompaction(id, parentID string, c sessions.Compaction, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendJSONLine(&buf, outCompactionEntry{
		Type: entryCompaction, ID: id, ParentID: nullable(parentID), Timestamp: formatTimestamp(now),
		Summary: c.Summary, FirstKeptEntryID: c.FirstKeptEntryID, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
	}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
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

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
