// Package llm defines the provider contract shared by the agent runner and
// the provider implementations (openai, anthropic, echo): a streaming chat
// call over the transcript's message types.
//
// Providers are safe for concurrent use; a Stream call must return promptly
// when its context is cancelled.
package llm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gateway/gateway/sessions"
)

// Tool describes a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema object
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []sessions.Message
	Tools     []Tool
	MaxTokens int
	// Thinking is the session's reasoning effort (sessions.ThinkingOff,
	// Low, Medium, High); "" leaves the provider's default. Providers
	// that are Thinkers apply it; others ignore it.
	Thinking string
	// Memo is the session's Memo (nil: none): a provider may keep there
	// what later calls of the session can reuse.
	Memo *Memo
}

// Event is one streamed piece of the answer.
type Event struct {
	TextDelta string
	// ToolCall is set once a tool call is fully assembled.
	ToolCall *sessions.Content
}

// Provider is one configured model backend.
type Provider interface {
	// Name is the configured provider name ("openai", "local").
	Name() string
	// Stream calls the model, reports deltas to fn (which may be nil) and
	// returns the complete assistant message (role assistant, content,
	// tool calls, usage if reported, stop reason, provider and model set).
	Stream(ctx context.Context, req Request, fn func(Event)) (sessions.Message, error)
}

// ErrContextOverflow is wrapped by providers when the model says the
// request exceeds its context window.
var ErrContextOverflow = errors.New("context window exceeded")

// Stop reasons (pi-coding-agent spelling).
const (
	StopEnd     = "stop"
	StopToolUse = "toolUse"
	StopLength  = "length"
	StopError   = "error"
	// StopRefusal: the model or its provider's filter declined to answer
	// (Anthropic stop_reason "refusal", OpenAI finish_reason
	// "content_filter"); the text may be empty or cut short.
	StopRefusal = "refusal"
)
