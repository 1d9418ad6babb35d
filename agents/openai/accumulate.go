package openai

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// accumulator assembles a streamed answer; tool-call fragments are merged
// by their index (the first fragment carries id and name, later ones
// argument pieces).
type accumulator struct {
	text   strings.Builder
	calls  map[int]*toolCall
	next   int // index for fragments without one
	finish string
	model  string
	usage  *sessions.Usage
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// add takes one chunk and returns its text delta.
func (a *accumulator) add(chunk *chunk) string {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if u := chunk.Usage; u != nil {
		a.usage = &sessions.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
			// prompt_tokens includes the cached ones; usage.input is the
			// uncached part (as pi and Anthropic count), so a price per kind
			// does not charge cached tokens twice.
			a.usage.CacheRead = d.CachedTokens
			a.usage.Input = max(0, a.usage.Input-a.usage.CacheRead)
		}
	}
	if len(chunk.Choices) == 0 {
		return ""
	}
	ch := &chunk.Choices[0]
	if ch.FinishReason != "" {
		a.finish = ch.FinishReason
	}
	for _, tc := range ch.Delta.ToolCalls {
		idx := a.next
		if tc.Index != nil {
			idx = *tc.Index
		} else if tc.ID == "" && len(a.calls) > 0 {
			idx = a.next - 1 // a fragment of the latest call
		}
		if a.calls == nil {
			a.calls = map[int]*toolCall{}
		}
		c := a.calls[idx]
		if c == nil {
			c = &toolCall{}
			a.calls[idx] = c
			a.next = max(a.next, idx+1)
		}
		if tc.ID != "" {
			c.id = tc.ID
		}
		if n := tc.Function.Name; n != "" && n != c.name {
			// Pieces of a name are joined; a name repeated in every
			// fragment (some servers) is kept once.
			c.name += n
		}
		c.args.WriteString(tc.Function.Arguments)
	}
	a.text.WriteString(ch.Delta.Content)
	return ch.Delta.Content
}

func (a *accumulator) message() sessions.Message {
	m := sessions.Message{Role: sessions.RoleAssistant, Model: a.model, Usage: a.usage}
	if a.text.Len() > 0 {
		m.Content = append(m.Content, sessions.Content{Type: sessions.BlockText, Text: a.text.String()})
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		c := a.calls[i]
		m.Content = append(m.Content, sessions.Content{Type: sessions.BlockToolCall, ID: c.id, Name: c.name, Arguments: rawArgs(c.args.String())})
	}
	switch {
	case a.finish == "length":
		// Before tool use: a call the limit cut may hold broken
		// arguments, and the runner runs no call of a cut answer.
		m.StopReason = llm.StopLength
	case len(a.calls) > 0:
		m.StopReason = llm.StopToolUse
	case a.finish == "content_filter":
		m.StopReason = llm.StopRefusal
	default:
		m.StopReason = llm.StopEnd
	}
	return m
}

// rawArgs keeps valid JSON as is; anything else (a truncated stream, a
// model that wrote prose) is kept as a JSON string so the transcript stays
// valid JSON.
func rawArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
