package openai

import (
	"encoding/json"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// The request as the provider built it for go-openai before it wrote its
// own wire code (kept verbatim): request_test.go checks that the hand
// written body says the same, and the benchmarks compare the two.

func goOpenAIRequest(req llm.Request) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:           req.Model,
		Messages:        toMessages(req.System, req.Messages),
		Tools:           toTools(req.Tools),
		Stream:          true,
		StreamOptions:   &goopenai.StreamOptions{IncludeUsage: true},
		MaxTokens:       req.MaxTokens,
		ReasoningEffort: llm.ReasoningEffort(req.Thinking),
	}
}

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
			text := llm.ToolResultText(m)
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
			Name: t.Name, Description: toolDescription(t.Description), Parameters: params, // the API's limit, as encodeRequest cuts it
		}})
	}
	return out
}
