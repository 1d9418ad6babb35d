package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Reading transcript lines (pi-coding-agent SessionManager, version 3) into
// entries: lenient about what pi may write (string content, custom roles,
// entry types we do not model). Writing them is encode.go (EncodeHeader,
// EncodeMessage, EncodeCompaction), in the shapes pi reads; only the
// backends write and read lines, through this engine.

// Entry types of a transcript line.
const (
	entrySession       = "session"
	entryMessage       = "message"
	entryCompaction    = "compaction"
	entryCustomMessage = "custom_message"
	entryBranchSummary = "branch_summary"
)

// Texts wrapping summaries for the model; identical to pi's so a session
// continued by either program sends the same prompt.
const (
	compactionSummaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	compactionSummarySuffix = "\n</summary>"
	branchSummaryPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	branchSummarySuffix     = "</summary>"
)

// wireLine is every field of every line type we read. Unknown fields are
// ignored; unknown types only link the chain.
type wireLine struct {
	Type      string  `json:"type"`
	ID        *string `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`

	// session header
	Version    *int   `json:"version"`
	Cwd        string `json:"cwd"`
	SessionKey string `json:"sessionKey"`
	AgentID    string `json:"agentId"`

	// message
	Message    json.RawMessage `json:"message"`
	RecordIDs  []string        `json:"recordIds"`  // gateway extension
	HistorySeq uint64          `json:"historySeq"` // gateway extension

	// compaction, branch_summary
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId"`
	TokensBefore     float64 `json:"tokensBefore"`
	TokensAfter      float64 `json:"tokensAfter"`
	FromID           string  `json:"fromId"`

	// custom_message
	Content json.RawMessage `json:"content"`
}

// wireMessage is a message as pi stores it: content may be a string, and
// the roles custom and bashExecution are sent to the model as user text.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	IsError    bool            `json:"isError"`
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	Usage      *sessions.Usage `json:"usage"`
	StopReason string          `json:"stopReason"`
	Timestamp  float64         `json:"timestamp"`

	// bashExecution
	Command            string   `json:"command"`
	Output             string   `json:"output"`
	ExitCode           *float64 `json:"exitCode"`
	Cancelled          bool     `json:"cancelled"`
	Truncated          bool     `json:"truncated"`
	FullOutputPath     string   `json:"fullOutputPath"`
	ExcludeFromContext bool     `json:"excludeFromContext"`

	// branchSummary / compactionSummary (never written by pi as entries,
	// accepted anyway)
	Summary string `json:"summary"`
}

// NodeKind says what an entry contributes to the context.
type NodeKind uint8

const (
	KindLink       NodeKind = iota // links the chain only
	KindMessage                    // contributes msg
	KindCompaction                 // compaction entry
)

// Node is one parsed entry.
type Node struct {
	ID, Parent string
	Off        int64 // byte offset of the line
	Kind       NodeKind
	IsMessage  bool              // a "message" entry (counted by Stats)
	Msg        *sessions.Message // kindMessage
	Comp       *CompactionInfo
}

// CompactionInfo is a parsed compaction entry: what was appended and when.
type CompactionInfo struct {
	sessions.Compaction
	At time.Time
}

// Message is the user message that stands for the compaction at the start
// of a context: its summary wrapped in pi's words, at the compaction's time.
func (c *CompactionInfo) Message() sessions.Message {
	return sessions.Message{
		Role:      sessions.RoleUser,
		Content:   []sessions.Content{{Type: sessions.BlockText, Text: compactionSummaryPrefix + c.Summary + compactionSummarySuffix}},
		Timestamp: c.At.UnixMilli(),
	}
}

// SessionLine is a parsed session line.
type SessionLine struct {
	ID      string
	version int
	Header
}

var errNotHeader = errors.New("not a session header")

// ParseHeader parses a transcript's first line, its session line. It
// refuses versions before 2, which pi migrates when it opens them.
func ParseHeader(line []byte) (SessionLine, error) {
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		return SessionLine{}, err
	}
	if w.Type != entrySession || w.ID == nil {
		return SessionLine{}, errNotHeader
	}
	h := SessionLine{ID: *w.ID, version: 1, Header: Header{SessionKey: w.SessionKey, AgentID: w.AgentID, Cwd: w.Cwd}}
	if w.Version != nil {
		h.version = *w.Version
	}
	if h.version < 2 {
		return SessionLine{}, fmt.Errorf("transcript version %d is not supported (open it once with pi to migrate it)", h.version)
	}
	return h, nil
}

// ParseEntry parses one non-header line. It returns nil for a line that is
// not an entry (a blank line or a repeated session line).
func ParseEntry(line []byte, off int64) (*Node, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, err
	}
	if w.Type == entrySession {
		return nil, nil
	}
	if w.Type == "" {
		return nil, errors.New("entry without type")
	}
	if w.ID == nil || *w.ID == "" {
		return nil, fmt.Errorf("%s entry without id", w.Type)
	}
	n := &Node{ID: *w.ID, Off: off}
	if w.ParentID != nil && *w.ParentID != n.ID {
		n.Parent = *w.ParentID
	}
	at := ParseTimestamp(w.Timestamp)
	switch w.Type {
	case entryMessage:
		n.IsMessage = true
		if len(w.Message) == 0 || bytes.Equal(w.Message, []byte("null")) {
			return nil, errors.New("message entry without message")
		}
		m, ok, err := decodeMessage(w.Message)
		if err != nil {
			return nil, fmt.Errorf("message: %w", err)
		}
		if ok {
			m.RecordIDs, m.HistorySeq = w.RecordIDs, w.HistorySeq
			n.Kind, n.Msg = KindMessage, &m
		}
	case entryCompaction:
		n.Kind = KindCompaction
		n.Comp = &CompactionInfo{At: at, Compaction: sessions.Compaction{
			Summary:          w.Summary,
			FirstKeptEntryID: w.FirstKeptEntryID,
			TokensBefore:     int64(w.TokensBefore),
			TokensAfter:      int64(w.TokensAfter),
		}}
	case entryCustomMessage:
		content, err := decodeContent(w.Content)
		if err != nil {
			return nil, fmt.Errorf("custom_message content: %w", err)
		}
		n.Kind = KindMessage
		n.Msg = &sessions.Message{Role: sessions.RoleUser, Content: content, Timestamp: at.UnixMilli()}
	case entryBranchSummary:
		if w.Summary != "" {
			n.Kind = KindMessage
			n.Msg = &sessions.Message{Role: sessions.RoleUser, Timestamp: at.UnixMilli(),
				Content: []sessions.Content{{Type: sessions.BlockText, Text: branchSummaryPrefix + w.Summary + branchSummarySuffix}}}
		}
	}
	return n, nil
}

// decodeMessage converts a stored message into what the model is sent; ok
// is false for messages that are not sent (excluded bash runs, roles we do
// not know).
func decodeMessage(raw json.RawMessage) (sessions.Message, bool, error) {
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return sessions.Message{}, false, err
	}
	m := sessions.Message{
		Role: w.Role, ToolCallID: w.ToolCallID, ToolName: w.ToolName, IsError: w.IsError,
		Provider: w.Provider, Model: w.Model, Usage: w.Usage, StopReason: w.StopReason,
		Timestamp: int64(w.Timestamp),
	}
	text := func(s string) []sessions.Content { return []sessions.Content{{Type: sessions.BlockText, Text: s}} }
	switch w.Role {
	case sessions.RoleUser, sessions.RoleAssistant, sessions.RoleToolResult:
		c, err := decodeContent(w.Content)
		if err != nil {
			return sessions.Message{}, false, fmt.Errorf("content: %w", err)
		}
		m.Content = c
	case "custom", "hookMessage": // hookMessage is the v2 name
		c, err := decodeContent(w.Content)
		if err != nil {
			return sessions.Message{}, false, fmt.Errorf("content: %w", err)
		}
		m = sessions.Message{Role: sessions.RoleUser, Content: c, Timestamp: m.Timestamp}
	case "bashExecution":
		if w.ExcludeFromContext {
			return sessions.Message{}, false, nil
		}
		m = sessions.Message{Role: sessions.RoleUser, Content: text(bashText(w)), Timestamp: m.Timestamp}
	case "branchSummary":
		m = sessions.Message{Role: sessions.RoleUser, Content: text(branchSummaryPrefix + w.Summary + branchSummarySuffix), Timestamp: m.Timestamp}
	case "compactionSummary":
		m = sessions.Message{Role: sessions.RoleUser, Content: text(compactionSummaryPrefix + w.Summary + compactionSummarySuffix), Timestamp: m.Timestamp}
	default:
		return sessions.Message{}, false, nil
	}
	return m, true, nil
}

// decodeContent accepts pi's two content shapes: a string or a block array.
func decodeContent(raw json.RawMessage) ([]sessions.Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []sessions.Content{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []sessions.Content{{Type: sessions.BlockText, Text: s}}, nil
	}
	var c []sessions.Content
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c == nil {
		c = []sessions.Content{}
	}
	return c, nil
}

// bashText renders a bash run as pi's bashExecutionToText does.
func bashText(w wireMessage) string {
	s := "Ran `" + w.Command + "`\n"
	if w.Output != "" {
		s += "```\n" + w.Output + "\n```"
	} else {
		s += "(no output)"
	}
	if w.Cancelled {
		s += "\n\n(command cancelled)"
	} else if w.ExitCode != nil && *w.ExitCode != 0 {
		s += fmt.Sprintf("\n\nCommand exited with code %d", int64(*w.ExitCode))
	}
	if w.Truncated && w.FullOutputPath != "" {
		s += "\n\n[Output truncated. Full output: " + w.FullOutputPath + "]"
	}
	return s
}

// ParseTimestamp parses a line's timestamp; the zero time when it is not
// RFC 3339.
func ParseTimestamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
