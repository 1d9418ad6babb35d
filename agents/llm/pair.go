package llm

import "github.com/gateway/gateway/sessions"

// InterruptedToolResult is the text of the result PairToolResults gives a
// tool call that has none.
const InterruptedToolResult = "No result: this tool call was interrupted before it finished."

// PairToolResults returns msgs as both wires accept them: every tool call
// of an assistant message answered by a tool result before the next user
// or assistant message, and no tool result that answers no call of the
// assistant message before it. A turn stopped (or a daemon killed) between
// storing a model's tool call and storing its result leaves a call with no
// result; such a call gets an error result saying it was interrupted, and
// a result with no call is left out. msgs is returned as it is (not
// copied) when it needs neither; msgs and its content are not changed.
func PairToolResults(msgs []sessions.Message) []sessions.Message {
	if paired(msgs) {
		return msgs
	}
	out := make([]sessions.Message, 0, len(msgs)+1)
	var open []sessions.Content // calls of the last assistant message not yet answered
	closeCalls := func() {
		for _, c := range open {
			out = append(out, sessions.Message{Role: sessions.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, IsError: true,
				Content: []sessions.Content{{Type: sessions.BlockText, Text: InterruptedToolResult}}})
		}
		open = open[:0]
	}
	for _, m := range msgs {
		if m.Role == sessions.RoleToolResult {
			if i := openCall(open, m.ToolCallID); i >= 0 {
				open = append(open[:i], open[i+1:]...)
				out = append(out, m)
			}
			continue
		}
		closeCalls()
		out = append(out, m)
		if m.Role == sessions.RoleAssistant {
			for _, c := range m.Content {
				if c.Type == sessions.BlockToolCall {
					open = append(open, c)
				}
			}
		}
	}
	closeCalls()
	return out
}

// paired reports whether msgs need no change by PairToolResults.
func paired(msgs []sessions.Message) bool {
	var open []string
	for _, m := range msgs {
		if m.Role == sessions.RoleToolResult {
			i := -1
			for j, id := range open {
				if id == m.ToolCallID {
					i = j
					break
				}
			}
			if i < 0 {
				return false
			}
			open = append(open[:i], open[i+1:]...)
			continue
		}
		if len(open) > 0 {
			return false
		}
		if m.Role == sessions.RoleAssistant {
			for _, c := range m.Content {
				if c.Type == sessions.BlockToolCall {
					open = append(open, c.ID)
				}
			}
		}
	}
	return len(open) == 0
}

func openCall(open []sessions.Content, id string) int {
	for i, c := range open {
		if c.ID == id {
			return i
		}
	}
	return -1
}
