package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// toMessages maps transcript messages to Messages API turns: tool calls
// become tool_use blocks, tool results tool_result blocks in a user turn,
// and consecutive turns of one role are merged (the API wants them
// alternating). Thinking blocks are sent back only with their signature
// (the API refuses them without; one is needed to continue a tool call
// made while thinking), redacted ones with their encrypted data. Tool
// call ids another provider gave are made valid here (toolids.go).
func toMessages(msgs []sessions.Message) []sdk.MessageParam {
	var out []sdk.MessageParam
	var ids toolIDs // toolids.go
	add := func(role sdk.MessageParamRole, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		var blocks []sdk.ContentBlockParamUnion
		switch m.Role {
		case sessions.RoleUser:
			for _, c := range m.Content {
				switch {
				case c.Type == sessions.BlockText && c.Text != "":
					blocks = append(blocks, sdk.NewTextBlock(c.Text))
				case c.Type == sessions.BlockImage:
					blocks = append(blocks, sdk.NewImageBlockBase64(c.MimeType, c.Data))
				}
			}
			add(sdk.MessageParamRoleUser, blocks)
		case sessions.RoleAssistant:
			for _, c := range m.Content {
				switch {
				case c.Type == sessions.BlockText && c.Text != "":
					blocks = append(blocks, sdk.NewTextBlock(c.Text))
				case c.Type == sessions.BlockThinking && c.Signature != "":
					blocks = append(blocks, sdk.NewThinkingBlock(c.Signature, c.Thinking))
				case c.Type == sessions.BlockThinking && c.Data != "":
					blocks = append(blocks, sdk.NewRedactedThinkingBlock(c.Data))
				case c.Type == sessions.BlockToolCall:
					args := c.Arguments
					if len(args) == 0 || !json.Valid(args) {
						args = json.RawMessage(`{}`)
					}
					blocks = append(blocks, sdk.NewToolUseBlock(ids.call(c.ID), args, c.Name))
				}
			}
			add(sdk.MessageParamRoleAssistant, blocks)
		case sessions.RoleToolResult:
			text := llm.ToolResultText(m) // parts kept apart (llm.PartSeparator)
			add(sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{sdk.NewToolResultBlock(ids.result(m.ToolCallID), text, m.IsError)})
		}
	}
	return out
}

func toTools(tools []llm.Tool) []sdk.ToolUnionParam {
	out := make([]sdk.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		var schema map[string]any
		_ = json.Unmarshal(t.Parameters, &schema)
		in := sdk.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "properties" && k != "required" && k != "type" {
				in.ExtraFields[k] = v
			}
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: tp})
	}
	return out
}

// fromMessage maps an accumulated answer to a transcript message.
func fromMessage(m sdk.Message) sessions.Message {
	out := sessions.Message{Role: sessions.RoleAssistant, Model: string(m.Model)}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			if c.Text != "" {
				out.Content = append(out.Content, sessions.Content{Type: sessions.BlockText, Text: c.Text})
			}
		case "thinking":
			out.Content = append(out.Content, sessions.Content{Type: sessions.BlockThinking, Thinking: c.Thinking, Signature: c.Signature})
		case "redacted_thinking":
			// Encrypted reasoning: a thinking block whose Data is the
			// API's opaque data, sent back as it came (a tool call made
			// after it needs it in the next request).
			out.Content = append(out.Content, sessions.Content{Type: sessions.BlockThinking, Data: c.Data})
		case "tool_use":
			args := json.RawMessage(c.Input)
			if len(args) == 0 || !json.Valid(args) {
				args = json.RawMessage(`{}`)
			}
			out.Content = append(out.Content, sessions.Content{Type: sessions.BlockToolCall, ID: c.ID, Name: c.Name, Arguments: args})
		}
	}
	u := m.Usage
	out.Usage = &sessions.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens,
		CacheWrite: u.CacheCreationInputTokens}
	out.Usage.TotalTokens = u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	switch m.StopReason {
	case "tool_use":
		out.StopReason = llm.StopToolUse
	case "max_tokens":
		out.StopReason = llm.StopLength
	case "refusal":
		out.StopReason = llm.StopRefusal
	default:
		out.StopReason = llm.StopEnd
	}
	return out
}
