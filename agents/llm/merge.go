package llm

import "github.com/gateway/gateway/sessions"

// MergeSameRole returns msgs with each run of consecutive user messages,
// and of consecutive assistant messages, merged into one (seed 004: the
// provider request never holds two turns of one role in a row): content
// blocks concatenated, adjacent text blocks joined with a blank line, the
// first message's other fields kept. An assistant message with tool calls
// takes no later message into it (its results must follow it), and tool
// results are never merged (each answers its own call). msgs and its
// content are not changed.
func MergeSameRole(msgs []sessions.Message) []sessions.Message {
	var out []sessions.Message
	for i, m := range msgs {
		if i == 0 || !mergeable(msgs[i-1], m) {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]sessions.Message, 0, len(msgs)), msgs[:i]...)
		}
		last := &out[len(out)-1]
		merged := make([]sessions.Content, 0, len(last.Content)+len(m.Content))
		merged = append(merged, last.Content...)
		next := m.Content
		if n := len(merged); n > 0 && len(next) > 0 && merged[n-1].Type == sessions.BlockText && next[0].Type == sessions.BlockText {
			joined := merged[n-1]
			joined.Text += "\n\n" + next[0].Text
			merged[n-1], next = joined, next[1:]
		}
		last.Content = append(merged, next...)
	}
	if out == nil {
		return msgs
	}
	return out
}

// mergeable says whether next joins prev's turn: same role, user or
// assistant, and prev calls no tool.
func mergeable(prev, next sessions.Message) bool {
	if prev.Role != next.Role || (prev.Role != sessions.RoleUser && prev.Role != sessions.RoleAssistant) {
		return false
	}
	for _, c := range prev.Content {
		if c.Type == sessions.BlockToolCall {
			return false
		}
	}
	return true
}
