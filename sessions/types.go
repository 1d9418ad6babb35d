package sessions

import (
	"encoding/json"
	"time"
)

// Entry is one row of sessions.json (SPEC §3.2). It never holds message bodies.
type Entry struct {
	SessionKey        string    `json:"sessionKey"`
	SessionID         string    `json:"sessionId"`
	CreatedAt         time.Time `json:"createdAt"`
	SessionStartedAt  time.Time `json:"sessionStartedAt"`
	LastInteractionAt time.Time `json:"lastInteractionAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
	Title             string    `json:"title,omitempty"`
	Channel           string    `json:"channel,omitempty"`
	ChatType          string    `json:"chatType,omitempty"`
	LastChannel       string    `json:"lastChannel,omitempty"`
	LastTo            string    `json:"lastTo,omitempty"`
	LastAccountID     string    `json:"lastAccountId,omitempty"`
	LastThreadID      string    `json:"lastThreadId,omitempty"`
	LastFrom          string    `json:"lastFrom,omitempty"`
	DisplayName       string    `json:"displayName,omitempty"`
	Model             string    `json:"model,omitempty"`
	Provider          string    `json:"provider,omitempty"`
	ModelOverride     string    `json:"modelOverride,omitempty"`
	QueueMode         string    `json:"queueMode,omitempty"`
	QueueDebounceMs   int64     `json:"queueDebounceMs,omitempty"`
	QueueCap          int       `json:"queueCap,omitempty"`
	QueueDrop         string    `json:"queueDrop,omitempty"`
	InputTokens       int64     `json:"inputTokens,omitempty"`
	OutputTokens      int64     `json:"outputTokens,omitempty"`
	TotalTokens       int64     `json:"totalTokens,omitempty"`
	ContextTokens     int64     `json:"contextTokens,omitempty"`
	CompactionCount   int       `json:"compactionCount,omitempty"`
	MessageCount      int       `json:"messageCount,omitempty"`
	SpawnedBy         string    `json:"spawnedBy,omitempty"`
	ParentSessionKey  string    `json:"parentSessionKey,omitempty"`
	Label             string    `json:"label,omitempty"`
	// CompactionOffset is the byte offset of the latest compaction entry in
	// the transcript, so loading need not parse what precedes it.
	CompactionOffset int64 `json:"compactionOffset,omitempty"`

	// ProviderOverride is the provider of a ModelOverride written without
	// one (OpenClaw's entries keep the two apart); ModelFor joins them.
	ProviderOverride string `json:"providerOverride,omitempty"`
	// ThinkingLevel is the session's reasoning effort (/think): one of
	// ThinkingLevels; "" is the provider's default.
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
	// GroupActivation is how a group session is addressed (/activation):
	// ActivationMention, ActivationAlways, or "" for the room's rule.
	GroupActivation string `json:"groupActivation,omitempty"`
	// VerboseLevel and ReasoningLevel are the reference system's per-session
	// levels (seed 002: how much of its tool use and of its reasoning a
	// session shows), kept as written for operators and tools; "" is the
	// default.
	VerboseLevel   string `json:"verboseLevel,omitempty"`
	ReasoningLevel string `json:"reasoningLevel,omitempty"`
	// SendPolicy is SendAllow, SendDeny or "" (allow): with deny the
	// session's replies are recorded in its transcript but not sent to its
	// chat (seed 002).
	SendPolicy string `json:"sendPolicy,omitempty"`
	// ResponseUsage is the reference system's usage footer setting (on,
	// off, tokens, full), kept as written; "" is the default.
	ResponseUsage string `json:"responseUsage,omitempty"`
	// DeliveryContext is where the session's latest reply was delivered
	// (seed 002): the channel, bot account, chat and thread the outbox
	// sent it to. It follows replies, where the last* fields follow
	// inbound messages; zero until the session has replied somewhere.
	DeliveryContext DeliveryContext `json:"deliveryContext,omitzero"`
	// SubagentCleanup and RunTimeoutSeconds are a subagent's spawn options
	// (sessions_spawn cleanup and runTimeoutSeconds): "delete" archives
	// the child once its run has ended and reported; a run that lasts
	// longer than RunTimeoutSeconds (0: the agent's turn timeout) is
	// stopped and reported as timed out. RunStartedAt (Unix milliseconds,
	// 0: not running) is when the child's current run began, so the
	// limit counts from it across a restart.
	SubagentCleanup   string `json:"subagentCleanup,omitempty"`
	RunTimeoutSeconds int    `json:"runTimeoutSeconds,omitempty"`
	RunStartedAt      int64  `json:"runStartedAt,omitempty"`
	// Extra holds, as one JSON object, the members of a stored entry that
	// this version does not know (fields the reference system or a newer
	// release wrote: origin, skillsSnapshot...), so that a
	// write-back keeps them. The files backend stores them beside the known
	// fields; a backend without room for them drops them. Empty: none.
	Extra string `json:"-"`
}

// DeliveryContext is where a reply went: seed 002's deliveryContext
// object, as the reference system writes it (a numeric threadId is read as
// text). The zero value is "nowhere yet".
type DeliveryContext struct {
	Channel   string `json:"channel,omitempty"`
	To        string `json:"to,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`
}

// Subagent cleanup modes (Entry.SubagentCleanup).
const (
	CleanupKeep   = "keep"
	CleanupDelete = "delete"
)

// Roles of a transcript message.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolResult = "toolResult"
)

// Content block types.
const (
	BlockText     = "text"
	BlockToolCall = "toolCall"
	BlockThinking = "thinking"
	BlockImage    = "image"
)

// Content is one block of a message (pi-coding-agent's content parts).
type Content struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"thinkingSignature,omitempty"` // of a thinking block (Anthropic): sent back with it
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Data      string          `json:"data,omitempty"`
	MimeType  string          `json:"mimeType,omitempty"`
}

// Usage is what a provider reported for one assistant message, with its
// cost as pi writes it (zero when the model has no configured price).
type Usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
	Cost        Cost  `json:"cost"`
}

// Cost is the price of one assistant message in USD, by token kind (pi's
// usage.cost block).
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// Message is one model-facing message as stored in a transcript entry.
type Message struct {
	Role       string    `json:"role"`
	Content    []Content `json:"content"`
	ToolCallID string    `json:"toolCallId,omitempty"`
	ToolName   string    `json:"toolName,omitempty"`
	IsError    bool      `json:"isError,omitempty"`
	Provider   string    `json:"provider,omitempty"`
	Model      string    `json:"model,omitempty"`
	Usage      *Usage    `json:"usage,omitempty"`
	StopReason string    `json:"stopReason,omitempty"`
	Timestamp  int64     `json:"timestamp"` // unix milliseconds
	// RecordIDs are the journal records a user message carries (stored on
	// its transcript entry as recordIds): recovery reads them to tell an
	// input already appended from one still to append.
	RecordIDs []string `json:"-"`
	// HistorySeq is the room history sequence a user message took up to
	// (stored as historySeq): the history is cut after it, and recovery
	// repeats the cut if the process died before it.
	HistorySeq uint64 `json:"-"`
}

// Text joins the message's text blocks.
func (m Message) Text() string {
	var s string
	for _, c := range m.Content {
		if c.Type == BlockText {
			s += c.Text
		}
	}
	return s
}

// UserText builds a user message with one text block.
func UserText(text string, at time.Time) Message {
	return Message{Role: RoleUser, Content: []Content{{Type: BlockText, Text: text}}, Timestamp: at.UnixMilli()}
}

// Context is what the model is sent for a session, rebuilt from the
// transcript (SPEC §3.4).
type Context struct {
	// Messages are in order; when the chain holds a compaction, the first is
	// a synthetic user message wrapping the latest summary.
	Messages []Message
	// EntryIDs[i] is the transcript entry id Messages[i] came from ("" for
	// synthetic messages such as the summary or a synthetic tool result).
	EntryIDs []string
	// Summary is the latest compaction summary ("" if none).
	Summary string
	// LeafID is the id of the last entry of the chain ("" for an empty transcript).
	LeafID string
}

// Compaction is a compaction entry to append (TranscriptLog.AppendCompaction):
// the summary replaces every entry of the chain before FirstKeptEntryID.
type Compaction struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int64
	TokensAfter      int64
}
