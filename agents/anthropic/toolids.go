package anthropic

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Tool call ids from other providers. A session that moved here (a
// fallback model, /model) carries the ids another provider gave its tool
// calls: Kimi and others behind OpenAI-compatible endpoints write
// "functions.search:0", some local servers write none. The Messages API
// refuses a tool_use id outside ^[a-zA-Z0-9_-]+$ (a 400, the request's
// fault, so the turn fails). toolIDs maps ids onto that alphabet the same
// way every time (the request prefix stays cacheable): a valid id as it
// is; another one cleaned, with a hash of the original so two ids cleaned
// alike stay apart; a missing one numbered, and a result with no id takes
// the oldest such call not yet answered (results follow their calls).

// toolIDs maps the tool call ids of one request's messages.
type toolIDs struct {
	unnamed int      // calls without an id seen so far
	pending []string // ids given to calls without one, not yet answered
}

// call returns the id to send for a tool call's id.
func (t *toolIDs) call(id string) string {
	if id == "" {
		t.unnamed++
		out := fmt.Sprintf("toolu_unnamed_%d", t.unnamed)
		t.pending = append(t.pending, out)
		return out
	}
	return cleanToolID(id)
}

// result returns the id to send for a tool result's ToolCallID.
func (t *toolIDs) result(id string) string {
	if id == "" && len(t.pending) > 0 {
		out := t.pending[0]
		t.pending = t.pending[1:]
		return out
	}
	return cleanToolID(id)
}

func validToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func cleanToolID(id string) string {
	if validToolID(id) {
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id) && b.Len() < 40; i++ {
		c := id[i]
		if validToolID(string(c)) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	fmt.Fprintf(&b, "_%08x", h.Sum32())
	return b.String()
}
