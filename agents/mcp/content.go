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
// inlined as text. Structured content is the text when the server sent no
// content blocks. The text kept is at most MaxResultText bytes however
// many parts it came in, with one note of what was left out.
func convert(r *sdk.CallToolResult) Result {
	b := resultBuilder{budget: MaxResultText, images: MaxResultImageBytes}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			b.text(c.Text)
		case *sdk.ImageContent:
			if len(c.Data) > MaxImageBytes || !strings.HasPrefix(c.MIMEType, "image/") {
				b.text(fmt.Sprintf("[image: %s, %d bytes, not shown: over %d bytes or not an image type]", c.MIMEType, len(c.Data), MaxImageBytes))
				continue
			}
			if len(c.Data) > b.images {
				b.text(fmt.Sprintf("[image: %s, %d bytes, not shown: the result's images are over %d bytes in all]", c.MIMEType, len(c.Data), MaxResultImageBytes))
				continue
			}
			b.images -= len(c.Data)
			// The text note tells a model that reads only a tool result's
			// text (the providers send tool results as text) what came.
			b.text(fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
			b.block(sessions.Content{Type: sessions.BlockImage, Data: base64.StdEncoding.EncodeToString(c.Data), MimeType: c.MIMEType})
		case *sdk.AudioContent:
			b.text(fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			b.text(fmt.Sprintf("[resource: %s %s%s]", c.Name, c.URI, optional(" — ", c.Description)))
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			if c.Resource.Text != "" {
				b.text(fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			} else {
				b.text(fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		default:
			b.text(fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if b.empty() && r.StructuredContent != nil {
		if j, err := json.Marshal(r.StructuredContent); err == nil {
			b.text(string(j))
		}
	}
	return Result{Content: b.finish(), IsError: r.IsError}
}

// resultBuilder collects a result's blocks: consecutive text parts are
// joined into one text block (partSeparator between them), within a
// budget of bytes for all of the text.
type resultBuilder struct {
	blocks []sessions.Content
	parts  []string // text parts of the text block being built
	budget int      // text bytes left (parts and separators)
	images int      // image bytes left
	cut    int      // text bytes left out
	sep    bool     // the next part needs a separator (a part before it in its block)
}

// text adds one text part, cut (on a character boundary) to what the
// budget leaves; what does not fit is counted for the note.
func (b *resultBuilder) text(s string) {
	if s == "" {
		return
	}
	if b.sep {
		s = partSeparator + s
	}
	if len(s) > b.budget {
		keep := b.budget
		for keep > 0 && !utf8Start(s[keep]) {
			keep--
		}
		b.cut += len(s) - keep
		s = s[:keep]
		b.budget = 0
	} else {
		b.budget -= len(s)
	}
	if s != "" {
		b.parts = append(b.parts, s)
		b.sep = true
	}
}

// block adds a block other than text, after the text so far.
func (b *resultBuilder) block(c sessions.Content) {
	b.flush()
	b.blocks = append(b.blocks, c)
	b.sep = false
}

// flush ends the text block being built.
func (b *resultBuilder) flush() {
	if len(b.parts) == 0 {
		return
	}
	b.blocks = append(b.blocks, sessions.Content{Type: sessions.BlockText, Text: strings.Join(b.parts, "")})
	b.parts = nil
}

func (b *resultBuilder) empty() bool { return len(b.blocks) == 0 && len(b.parts) == 0 }

// finish returns the blocks, the note of what was cut last;
// "(no output)" when there is nothing.
func (b *resultBuilder) finish() []sessions.Content {
	if b.cut > 0 {
		b.parts = append(b.parts, fmt.Sprintf("\n[cut: %d more bytes of the result were left out]", b.cut))
	}
	b.flush()
	if len(b.blocks) == 0 {
		return []sessions.Content{{Type: sessions.BlockText, Text: "(no output)"}}
	}
	return b.blocks
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
