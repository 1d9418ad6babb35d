package agents

import (
	"fmt"
	"unicode/utf8"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// The results of the tool calls of a turn belong to its last turn, which
// neither pruning nor a compaction leaves out: a few large ones (web
// pages, an MCP server's file or query) could make the request larger
// than the model's window, and the turn then failed with "too long even
// after compacting". When the history sent is larger than the window
// less the reserve, the request carries the largest tool results cut
// (the same cap for all of them, as little as needed, never below
// minToolResultKeep bytes), each marked as cut; the transcript keeps them
// whole.

// minToolResultKeep is the least a cut tool result keeps of its text (bytes).
const minToolResultKeep = 2000

// toolResultCutNote ends a cut tool result (%d: bytes left out).
const toolResultCutNote = "\n\n[… %d more characters of this tool result were cut here: the whole result did not fit in the model's context window …]"

// fitToolResults returns msgs with the text of their largest tool results
// cut so that their estimate fits limit tokens, or msgs itself when it
// does (or there is no tool result to cut). msgs are not changed: their
// blocks are shared with the transcript's context.
func fitToolResults(msgs []sessions.Message, limit int64) []sessions.Message {
	total := llm.EstimateMessages(msgs)
	if total <= limit {
		return msgs
	}
	var lens []int
	for i := range msgs {
		if msgs[i].Role == sessions.RoleToolResult {
			lens = append(lens, textBytes(msgs[i]))
		}
	}
	// Each cut adds its note.
	excess := int(llm.TextBytes(total-limit)) + 1 + len(lens)*len(toolResultCutNote)
	keep := cutCap(lens, excess)
	var out []sessions.Message
	for i := range msgs {
		if msgs[i].Role != sessions.RoleToolResult || textBytes(msgs[i]) <= keep {
			continue
		}
		if out == nil {
			out = append([]sessions.Message(nil), msgs...)
		}
		out[i] = cutToolResult(msgs[i], keep)
	}
	if out == nil {
		return msgs
	}
	return out
}

// cutCap is the largest cap c (at least minToolResultKeep) such that
// cutting every length in lens to c removes at least excess bytes;
// minToolResultKeep when no cap does.
func cutCap(lens []int, excess int) int {
	removed := func(c int) int {
		n := 0
		for _, l := range lens {
			n += max(0, l-c)
		}
		return n
	}
	lo, hi := minToolResultKeep, minToolResultKeep
	for _, l := range lens {
		hi = max(hi, l)
	}
	if removed(lo) < excess {
		return lo
	}
	for lo < hi { // removed(lo) ≥ excess holds
		mid := lo + (hi-lo+1)/2
		if removed(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// textBytes is the size of m's text blocks.
func textBytes(m sessions.Message) int {
	n := 0
	for _, c := range m.Content {
		if c.Type == sessions.BlockText {
			n += len(c.Text)
		}
	}
	return n
}

// cutToolResult is m with its text cut after keep bytes (on a character
// boundary) and the cut noted; other blocks (images) stay.
func cutToolResult(m sessions.Message, keep int) sessions.Message {
	content := make([]sessions.Content, 0, len(m.Content))
	cut, last := 0, -1 // last: the last text block kept
	for _, c := range m.Content {
		if c.Type != sessions.BlockText {
			content = append(content, c)
			continue
		}
		if keep <= 0 {
			cut += len(c.Text)
			continue
		}
		if len(c.Text) > keep {
			kept := runePrefix(c.Text, keep)
			cut += len(c.Text) - len(kept)
			c.Text = kept
			keep = 0
		} else {
			keep -= len(c.Text)
		}
		last = len(content)
		content = append(content, c)
	}
	if cut > 0 && last >= 0 {
		content[last].Text += fmt.Sprintf(toolResultCutNote, cut)
	}
	m.Content = content
	return m
}

// runePrefix is s cut to at most n bytes, on a character boundary.
func runePrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}
