package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/internal/jsonenc"
	"github.com/gateway/gateway/sessions"
)

// The request body is written by hand into one buffer: encoding/json
// reflecting over a go-openai request (and compacting each message's own
// MarshalJSON output again) cost ~10% of the daemon's CPU (issue 21).
// What is written is semantically what go-openai sent (request_test.go
// compares the two for every message shape): the transcript maps to chat
// messages as follows.
//   - system: {"role":"system","content":...} when there is a system prompt;
//   - user: "content" is the text, or content parts (text, image_url with
//     a data: URL) when the message has an image;
//   - assistant: the text, and each tool call as tool_calls[] of type
//     function with its arguments as a JSON string ("{}" when none);
//   - toolResult: role "tool" with tool_call_id and the result's text
//     (llm.ToolResultText).
//
// Empty strings are left out as go-openai's omitempty did.

// emptyParams is a tool's parameters when it declares none.
const emptyParams = `{"type":"object","properties":{}}`

// encodeRequest appends the streaming chat completion request for req to
// buf; it fails only on a tool whose parameters are not valid JSON.
func encodeRequest(buf *bytes.Buffer, req llm.Request) error {
	buf.WriteString(`{"model":`)
	writeString(buf, req.Model)
	buf.WriteString(`,"messages":[`)
	first := true
	sep := func() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
	}
	if req.System != "" {
		sep()
		buf.WriteString(`{"role":"system","content":`)
		writeString(buf, req.System)
		buf.WriteByte('}')
	}
	writeMessages(buf, req.Messages, first, req.Memo)
	buf.WriteByte(']')
	if req.MaxTokens != 0 {
		buf.WriteString(`,"max_tokens":`)
		buf.WriteString(strconv.Itoa(req.MaxTokens))
	}
	buf.WriteString(`,"stream":true`)
	if err := writeToolsMemo(buf, req.Tools, req.Memo); err != nil {
		return err
	}
	buf.WriteString(`,"stream_options":{"include_usage":true}`)
	// "" (off, or no level set) leaves the field out.
	writeField(buf, "reasoning_effort", llm.ReasoningEffort(req.Thinking))
	buf.WriteByte('}')
	return nil
}

// writeTools writes the tools array (nothing when there are none); it
// fails only on parameters that are not valid JSON.
func writeTools(buf *bytes.Buffer, tools []llm.Tool) error {
	if len(tools) == 0 {
		return nil
	}
	buf.WriteString(`,"tools":[`)
	for i, t := range tools {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"function":{"name":`)
		writeString(buf, t.Name)
		writeField(buf, "description", toolDescription(t.Description))
		buf.WriteString(`,"parameters":`)
		params := []byte(t.Parameters)
		if len(params) == 0 {
			params = []byte(emptyParams)
		}
		if err := json.Compact(buf, params); err != nil {
			return fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		buf.WriteString(`},"type":"function"}`)
	}
	buf.WriteByte(']')
	return nil
}

// maxTools is the most tools one request may offer.
const maxTools = 128

// maxToolDescription is the longest function description the API takes
// (in characters): a longer one — MCP servers describe their tools at
// length — fails the whole request ("string_above_max_length").
const maxToolDescription = 1024

// toolDescription is d cut to maxToolDescription characters, the cut
// marked with "…".
func toolDescription(d string) string {
	if utf8.RuneCountInString(d) <= maxToolDescription {
		return d
	}
	n := 0
	for i := range d {
		if n == maxToolDescription-1 {
			return d[:i] + "…"
		}
		n++
	}
	return d
}

// writeMessage writes m if its role is sent (user, assistant, tool
// result) and reports whether it did.
func writeMessage(buf *bytes.Buffer, m *sessions.Message) bool {
	switch m.Role {
	case sessions.RoleUser:
		writeUser(buf, m)
	case sessions.RoleAssistant:
		writeAssistant(buf, m)
	case sessions.RoleToolResult:
		buf.WriteString(`{"role":"tool"`)
		writeField(buf, "content", llm.ToolResultText(*m)) // parts kept apart (llm.PartSeparator)
		writeField(buf, "tool_call_id", m.ToolCallID)
		buf.WriteByte('}')
	default:
		return false
	}
	return true
}

// writeUser writes a user message: its text, or content parts when it
// carries an image.
func writeUser(buf *bytes.Buffer, m *sessions.Message) {
	hasImage := false
	for i := range m.Content {
		hasImage = hasImage || m.Content[i].Type == sessions.BlockImage
	}
	buf.WriteString(`{"role":"user"`)
	if !hasImage {
		writeField(buf, "content", m.Text())
		buf.WriteByte('}')
		return
	}
	buf.WriteString(`,"content":[`)
	first := true
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case sessions.BlockText:
			if !first {
				buf.WriteByte(',')
			}
			first = false
			buf.WriteString(`{"type":"text"`)
			writeField(buf, "text", c.Text)
			buf.WriteByte('}')
		case sessions.BlockImage:
			if !first {
				buf.WriteByte(',')
			}
			first = false
			// The URL is data:<mime>;base64,<data>, written in pieces.
			buf.WriteString(`{"type":"image_url","image_url":{"url":"data:`)
			writeStringBody(buf, c.MimeType)
			buf.WriteString(`;base64,`)
			writeStringBody(buf, c.Data)
			buf.WriteString(`"}}`)
		}
	}
	buf.WriteString(`]}`)
}

// writeAssistant writes an assistant message with its text and tool calls.
func writeAssistant(buf *bytes.Buffer, m *sessions.Message) {
	buf.WriteString(`{"role":"assistant"`)
	writeField(buf, "content", m.Text())
	first := true
	for i := range m.Content {
		c := &m.Content[i]
		if c.Type != sessions.BlockToolCall {
			continue
		}
		if first {
			buf.WriteString(`,"tool_calls":[`)
		} else {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteByte('{')
		if c.ID != "" {
			buf.WriteString(`"id":`)
			writeString(buf, c.ID)
			buf.WriteByte(',')
		}
		buf.WriteString(`"type":"function","function":{`)
		if c.Name != "" {
			buf.WriteString(`"name":`)
			writeString(buf, c.Name)
			buf.WriteByte(',')
		}
		buf.WriteString(`"arguments":`)
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		writeBytesString(buf, args)
		buf.WriteString(`}}`)
	}
	if !first {
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
}

// writeField writes ,"name":"s" unless s is empty (omitempty).
func writeField(buf *bytes.Buffer, name, s string) {
	if s == "" {
		return
	}
	buf.WriteString(`,"`)
	buf.WriteString(name)
	buf.WriteString(`":`)
	writeString(buf, s)
}

// writeString writes s as a JSON string (jsonenc: byte for byte what
// encoding/json writes, HTML escaping off).
func writeString(buf *bytes.Buffer, s string) {
	buf.Write(jsonenc.AppendString(buf.AvailableBuffer(), s))
}

// writeBytesString writes b as a JSON string. b is only read: viewing it
// as a string spares a copy of every tool call's arguments.
func writeBytesString(buf *bytes.Buffer, b []byte) {
	writeString(buf, unsafe.String(unsafe.SliceData(b), len(b)))
}

// writeStringBody writes s escaped for the inside of a JSON string.
func writeStringBody(buf *bytes.Buffer, s string) {
	buf.Write(jsonenc.AppendStringBody(buf.AvailableBuffer(), s))
}
