package agents

import (
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// pruneHistory returns the messages of c to send, leaving out the oldest
// turns while the history is larger than budget tokens (SPEC §5
// maxHistoryShare). A turn starts at a user message, so a tool call is
// never separated from its result; the compaction summary (first message
// when c has one) and the last turn are always kept. The transcript is not
// changed: compaction, not pruning, is what shortens a session for good.
func pruneHistory(c sessions.Context, budget int64) []sessions.Message {
	if llm.EstimateMessages(c.Messages) <= budget { // the common case: no sizes kept
		return c.Messages
	}
	var h historySizes
	return pruneSized(c, budget, &h, h.weigh(c.Messages))
}

// pruneSized is pruneHistory given c's messages weighed by h (the last
// weigh, whose sum is total).
func pruneSized(c sessions.Context, budget int64, h *historySizes, total int64) []sessions.Message {
	msgs := c.Messages
	if len(msgs) == 0 || total <= budget { // the common case
		return msgs
	}
	pinned := 0
	if c.Summary != "" {
		pinned = 1
	}
	// Turn starts after the pinned summary; the last one is never dropped.
	var starts []int
	for i := pinned; i < len(msgs); i++ {
		if msgs[i].Role == sessions.RoleUser {
			starts = append(starts, i)
		}
	}
	if len(starts) < 2 {
		return msgs
	}
	// Drop whole turns, oldest first, until the rest fits. Messages before
	// the first turn start (an assistant message right after the summary)
	// go with the first turn.
	drop := pinned
	for _, next := range starts[1:] {
		if total <= budget {
			break
		}
		for i := drop; i < next; i++ {
			total -= h.size(i)
		}
		drop = next
	}
	if drop == pinned {
		return msgs
	}
	out := make([]sessions.Message, 0, pinned+len(msgs)-drop)
	out = append(out, msgs[:pinned]...)
	return append(out, msgs[drop:]...)
}
