package openai

import (
	"encoding/json"
	"sort"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// toMessages maps transcript messages to chat messages: assistant tool
// calls become tool_calls, tool results become role "tool".
func toMessages(system string, msgs []sessions.Message) []goopenai.ChatCompletionMessage {
	out := make([]goopenai.ChatCompletionMessage, 0, len(msgs)+1)
	if system != "" {
		out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: system})
	}
	for _, m := range msgs {
		switch m.Role {
		case sessions.RoleUser:
			out = append(out, userMessage(m))
		case sessions.RoleAssistant:
			cm := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: m.Text()}
			for _, c := range m.Content {
				if c.Type != sessions.BlockToolCall {
					continue
				}
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				cm.ToolCalls = append(cm.ToolCalls, goopenai.ToolCall{
					ID: c.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: args},
				})
			}
			out = append(out, cm)
		case sessions.RoleToolResult:
			text := llm.ToolResultText(m) // parts kept apart (llm.PartSeparator)
			out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: m.ToolCallID, Content: text})
		}
	}
	return out
}

func userMessage(m sessions.Message) goopenai.ChatCompletionMessage {
	hasImage := false
	for _, c := range m.Content {
		hasImage = hasImage || c.Type == sessions.BlockImage
	}
	if !hasImage {
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: m.Text()}
	}
	var parts []goopenai.ChatMessagePart
	for _, c := range m.Content {
		switch c.Type {
		case sessions.BlockText:
			parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: c.Text})
		case sessions.BlockImage:
			parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL,
				ImageURL: &goopenai.ChatMessageImageURL{URL: "data:" + c.MimeType + ";base64," + c.Data}})
		}
	}
	return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, MultiContent: parts}
}

func toTools(tools []llm.Tool) []goopenai.Tool {
	out := make([]goopenai.Tool, 0, len(tools))
	for _, t := range tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return out
}

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

func (a *accumulator) add(chunk goopenai.ChatCompletionStreamResponse) string {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if u := chunk.Usage; u != nil {
		a.usage = &sessions.Usage{Input: int64(u.PromptTokens), Output: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens)}
		if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
			// prompt_tokens includes the cached ones; usage.input is the
			// uncached part (as pi and Anthropic count), so a price per kind
			// does not charge cached tokens twice.
			a.usage.CacheRead = int64(d.CachedTokens)
			a.usage.Input = max(0, a.usage.Input-a.usage.CacheRead)
		}
	}
	if len(chunk.Choices) == 0 {
		return ""
	}
	ch := chunk.Choices[0]
	if ch.FinishReason != "" {
		a.finish = string(ch.FinishReason)
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
		if tc.Function.Name != "" {
			c.name += tc.Function.Name
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
	case len(a.calls) > 0:
		m.StopReason = llm.StopToolUse
	case a.finish == "length":
		m.StopReason = llm.StopLength
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
