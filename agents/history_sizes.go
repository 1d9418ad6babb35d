package agents

import (
	"slices"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Every model call weighs the session's whole history (llm.EstimateMessage
// of each message: the compaction check and pruneHistory). Walking every
// message's content blocks each call made a session's turns cost O(n²) in
// all (issue 21: 5% of the daemon's CPU at 75 turns a session). A session
// keeps, between its turns, each message's estimate keyed by what the
// estimate reads: the message's content blocks, as the identity of their
// backing array and their count. Content blocks of a context are never
// changed in place (transcript.File.Context hands out shared ones that must
// not be), so the same array and count are the same blocks; a message built
// anew — a merge of user messages, a compaction's summary, a reset's new
// session — has a new array and is weighed again. Holding the array keeps
// it alive, so its address cannot be reused for other blocks while the
// memo names it.

// msgSize is one message's estimate and the blocks it was computed from.
type msgSize struct {
	blocks *sessions.Content // first content block; nil when there are none
	n      int               // number of content blocks
	size   int64             // llm.EstimateMessage
	ok     bool              // size was computed (a new slot has none)
}

// historySizes is one session's per-message estimates, by position in the
// last context weighed (kept in its sessionMemo, session_memo.go).
type historySizes struct {
	msgs []msgSize
}

// weigh returns the sum of llm.EstimateMessage over msgs, weighing only
// the messages whose blocks differ from those at the same position last
// time; size(i) is then msgs[i]'s.
func (h *historySizes) weigh(msgs []sessions.Message) int64 {
	if len(h.msgs) > len(msgs) {
		clear(h.msgs[len(msgs):]) // let go of the blocks
	}
	h.msgs = slices.Grow(h.msgs[:0], len(msgs))[:len(msgs)]
	var total int64
	for i := range msgs {
		m, e := &msgs[i], &h.msgs[i]
		var blocks *sessions.Content
		if len(m.Content) > 0 {
			blocks = &m.Content[0]
		}
		if !e.ok || e.blocks != blocks || e.n != len(m.Content) {
			*e = msgSize{blocks: blocks, n: len(m.Content), size: llm.EstimateMessage(*m), ok: true}
		}
		total += e.size
	}
	return total
}

// size is the estimate of message i of the msgs last weighed.
func (h *historySizes) size(i int) int64 { return h.msgs[i].size }
