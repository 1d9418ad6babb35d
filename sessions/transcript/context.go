package transcript

import "github.com/gateway/gateway/sessions"

// missingToolResult is the text of the synthetic result given to a tool call
// whose result never reached the transcript (crash or cancel mid-turn). The
// call may have run to its end before the interruption (a message posted,
// a note saved): the model is told so, lest it repeat a call that acted.
const missingToolResult = "tool result missing: the call was interrupted (the gateway stopped or the turn was cancelled), " +
	"so its outcome is unknown and it may already have taken effect (for example a message sent). " +
	"Do not repeat it unless you can tell that it did not."

// buildContext turns a resolved chain into what the model is sent: the
// latest compaction summary first, then the kept and later entries, with
// every tool call followed by its result and consecutive user messages
// merged (SPEC §3.4).
func buildContext(v *chainView, leaf string) sessions.Context {
	n := len(v.entries) + 1
	msgs := make([]sessions.Message, 0, n)
	ids := make([]string, 0, n)
	c := sessions.Context{LeafID: leaf}
	if v.comp != nil {
		c.Summary = v.comp.Comp.Summary
		msgs = append(msgs, v.comp.Comp.Message())
		ids = append(ids, "")
	}
	for _, e := range v.entries {
		msgs = append(msgs, *e.Msg)
		ids = append(ids, e.ID)
	}
	msgs, ids = pairToolCalls(msgs, ids)
	c.Messages, c.EntryIDs = mergeUsers(msgs, ids)
	return c
}

// pairToolCalls puts right after each assistant message the results of its
// tool calls, in call order, taking them from anywhere before the next
// assistant message. A call without a result gets a synthetic error result;
// a result that answers no call of the preceding assistant is dropped.
// Other messages found among the results keep their order after them.
func pairToolCalls(msgs []sessions.Message, ids []string) ([]sessions.Message, []string) {
	out := make([]sessions.Message, 0, len(msgs))
	outIDs := make([]string, 0, len(ids))
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case m.Role == sessions.RoleToolResult:
			i++ // orphan
			continue
		case m.Role != sessions.RoleAssistant || !hasToolCall(m):
			out, outIDs = append(out, m), append(outIDs, ids[i])
			i++
			continue
		}
		out, outIDs = append(out, m), append(outIDs, ids[i])
		j := i + 1
		for j < len(msgs) && msgs[j].Role != sessions.RoleAssistant {
			j++
		}
		// msgs[i+1:j] holds this call's results and any interleaved messages.
		used := make([]bool, j-i-1)
		for _, call := range m.Content {
			if call.Type != sessions.BlockToolCall {
				continue
			}
			k := -1
			for x := i + 1; x < j; x++ {
				if !used[x-i-1] && msgs[x].Role == sessions.RoleToolResult && msgs[x].ToolCallID == call.ID {
					k = x
					break
				}
			}
			if k < 0 {
				out = append(out, sessions.Message{
					Role: sessions.RoleToolResult, ToolCallID: call.ID, ToolName: call.Name, IsError: true,
					Content:   []sessions.Content{{Type: sessions.BlockText, Text: missingToolResult}},
					Timestamp: m.Timestamp,
				})
				outIDs = append(outIDs, "")
				continue
			}
			used[k-i-1] = true
			out, outIDs = append(out, msgs[k]), append(outIDs, ids[k])
		}
		for x := i + 1; x < j; x++ {
			if msgs[x].Role != sessions.RoleToolResult {
				out, outIDs = append(out, msgs[x]), append(outIDs, ids[x])
			}
		}
		i = j
	}
	return out, outIDs
}

func hasToolCall(m sessions.Message) bool {
	for _, c := range m.Content {
		if c.Type == sessions.BlockToolCall {
			return true
		}
	}
	return false
}

// mergeUsers merges runs of user messages into one (content blocks
// concatenated, adjacent text blocks joined with a blank line so the
// messages stay apart, first timestamp kept). The merged message's entry id
// is the first non-empty id of the run, so keeping from it keeps the whole
// run.
func mergeUsers(msgs []sessions.Message, ids []string) ([]sessions.Message, []string) {
	out := msgs[:0:0]
	outIDs := ids[:0:0]
	for i, m := range msgs {
		out, outIDs = appendMerged(out, outIDs, m, ids[i])
	}
	return out, outIDs
}

// appendMerged appends m (entry id) to out, merging it into the last
// message when both are user messages (see mergeUsers).
func appendMerged(out []sessions.Message, outIDs []string, m sessions.Message, id string) ([]sessions.Message, []string) {
	last := len(out) - 1
	if last < 0 || m.Role != sessions.RoleUser || out[last].Role != sessions.RoleUser {
		return append(out, m), append(outIDs, id)
	}
	merged := make([]sessions.Content, 0, len(out[last].Content)+len(m.Content))
	merged = append(merged, out[last].Content...)
	next := m.Content
	if n := len(merged); n > 0 && len(next) > 0 && merged[n-1].Type == sessions.BlockText && next[0].Type == sessions.BlockText {
		joined := merged[n-1] // a copy: cached blocks stay intact
		joined.Text += "\n\n" + next[0].Text
		merged[n-1], next = joined, next[1:]
	}
	merged = append(merged, next...)
	out[last].Content = merged // a fresh slice: cached entries stay intact
	if outIDs[last] == "" {
		outIDs[last] = id
	}
	return out, outIDs
}

// extendContext brings a cached context up to date with appended message
// entries without rebuilding it, when that gives what buildContext would:
// plain user and assistant messages after a context that does not end in
// tool calls. It reports false when the context must be rebuilt.
func extendContext(c *sessions.Context, nodes []*Node) bool {
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == sessions.RoleAssistant && hasToolCall(c.Messages[n-1]) {
		return false
	}
	for _, n := range nodes {
		if n.Kind != KindMessage || (n.Msg.Role != sessions.RoleUser && n.Msg.Role != sessions.RoleAssistant) ||
			(n.Msg.Role == sessions.RoleAssistant && hasToolCall(*n.Msg)) {
			return false
		}
	}
	for _, n := range nodes {
		c.Messages, c.EntryIDs = appendMerged(c.Messages, c.EntryIDs, *n.Msg, n.ID)
		c.LeafID = n.ID
	}
	return true
}

// copyContext returns c with its own Messages and EntryIDs slices. The
// content blocks stay shared with the cache and must not be modified.
func copyContext(c *sessions.Context) sessions.Context {
	out := *c
	out.Messages = append([]sessions.Message(nil), c.Messages...)
	out.EntryIDs = append([]string(nil), c.EntryIDs...)
	return out
}

// shareContext returns c without copying it: its slices are c's, cut to
// their length, so appending to them reallocates and never reaches the
// cache's later elements. Neither side changes an element it shares: the
// caller must not (as with content blocks), and the cache copies its
// slices before it would (fileState.extendView: a merge into the last
// message), so what was handed out stays as it was.
func shareContext(c *sessions.Context) sessions.Context {
	out := *c
	out.Messages, out.EntryIDs = nil, nil
	if n := len(c.Messages); n > 0 {
		out.Messages = c.Messages[:n:n]
	}
	if n := len(c.EntryIDs); n > 0 {
		out.EntryIDs = c.EntryIDs[:n:n]
	}
	return out
}

// mergesIntoLast reports whether extending c with nodes changes its last
// message rather than only appending (a user message after a user one).
func mergesIntoLast(c *sessions.Context, nodes []*Node) bool {
	n := len(c.Messages)
	return n > 0 && len(nodes) > 0 && c.Messages[n-1].Role == sessions.RoleUser &&
		nodes[0].Kind == KindMessage && nodes[0].Msg.Role == sessions.RoleUser
}
