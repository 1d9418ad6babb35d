package llm

import (
	"strings"

	"github.com/gateway/gateway/sessions"
)

// PartSeparator goes between the parts of a tool result that reach a
// model as one text (the providers send tool results as text): a blank
// line, so that parts that do not end in a newline (JSON, a number, an
// image note) do not run together.
const PartSeparator = "\n\n"

// ToolResultText is the text a model reads of tool result m: its text
// blocks joined by PartSeparator, "(no output)" when it has none.
func ToolResultText(m sessions.Message) string {
	var parts []string
	for _, c := range m.Content {
		if c.Type == sessions.BlockText && c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.Join(parts, PartSeparator)
}
