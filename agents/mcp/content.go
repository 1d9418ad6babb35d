package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gateway/gateway/sessions"
)

// Caps on what one result puts in the transcript.
const (
	// MaxResultText is the most text (bytes) kept from one result; the
	// rest is cut with a note.
	MaxResultText = 100_000
	// MaxImageBytes is the largest image kept as an image block; a larger
	// one is described.
	MaxImageBytes = 2 << 20
	// MaxResultImageBytes is the most image bytes one result keeps as
	// image blocks in all; later images are described. The transcript
	// carries them to every later request of the session.
	MaxResultImageBytes = 4 << 20
)

// partSeparator goes between the text parts of one result merged into
// one block: a blank line (llm.PartSeparator, which the providers put
// between blocks), so parts that end without a newline stay apart.
const partSeparator = "\n\n"

// Result is a tool call's outcome as transcript blocks. IsError is the
// server's isError: the tool ran and reported a failure.
type Result struct {
	Content []sessions.Content
	IsError bool
}

// convert turns a CallToolResult into transcript blocks: text as text,
// images (up to MaxImageBytes each, MaxResultImageBytes in all) as pi
// image blocks, audio, resource links and embedded resources described or
// inlined as text. Structured content is
// the text when the server sent no content blocks.
func convert(r *sdk.CallToolResult) Result {
	out := Result{IsError: r.IsError}
	budget, images := MaxResultText, MaxResultImageBytes
	addText := func(s string) {
		if s == "" {
			return
		}
		if len(s) > budget {
			cut := budget
			for cut > 0 && !utf8Start(s[cut]) {
				cut--
			}
			s = s[:cut] + fmt.Sprintf("\n[cut: %d more bytes of the result were left out]", len(s)-cut)
		}
		budget -= min(len(s), budget)
		if n := len(out.Content); n > 0 && out.Content[n-1].Type == sessions.BlockText {
			out.Content[n-1].Text += partSeparator + s
			return
		}
		out.Content = append(out.Content, sessions.Content{Type: sessions.BlockText, Text: s})
	}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			addText(c.Text)
		case *sdk.ImageContent:
			if len(c.Data) > MaxImageBytes || !strings.HasPrefix(c.MIMEType, "image/") {
				addText(fmt.Sprintf("[image: %s, %d bytes, not shown: over %d bytes or not an image type]", c.MIMEType, len(c.Data), MaxImageBytes))
				continue
			}
			if len(c.Data) > images {
				addText(fmt.Sprintf("[image: %s, %d bytes, not shown: the result's images are over %d bytes in all]", c.MIMEType, len(c.Data), MaxResultImageBytes))
				continue
			}
			images -= len(c.Data)
			// The text note tells a model that reads only a tool result's
			// text (the providers send tool results as text) what came.
			addText(fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
			out.Content = append(out.Content, sessions.Content{Type: sessions.BlockImage,
				Data: base64.StdEncoding.EncodeToString(c.Data), MimeType: c.MIMEType})
		case *sdk.AudioContent:
			addText(fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			addText(fmt.Sprintf("[resource: %s %s%s]", c.Name, c.URI, optional(" — ", c.Description)))
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			if c.Resource.Text != "" {
				addText(fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			} else {
				addText(fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			addText(fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if len(out.Content) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			addText(string(b))
		}
	}
	if len(out.Content) == 0 {
		out.Content = []sessions.Content{{Type: sessions.BlockText, Text: "(no output)"}}
	}
	return out
}

func optional(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// MaxInstructions is the most of a server's instructions (bytes) that
// reach a model's system prompt; the rest is cut with a note.
const MaxInstructions = 8 << 10

// cutInstructions trims s and cuts it to MaxInstructions at a character
// boundary.
func cutInstructions(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxInstructions {
		return s
	}
	cut := MaxInstructions
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[cut: %d more bytes of the instructions were left out]", len(s)-cut)
}
