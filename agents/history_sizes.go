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
	image  bool              // a block is an image
}

// historySizes is one session's per-message estimates, by position in the
// last context weighed (kept in its sessionMemo, session_memo.go).
type historySizes struct {
	msgs   []msgSize
	images bool // a message of the last weigh holds an image
}

// weigh returns the sum of llm.EstimateMessage over msgs, weighing only
// the messages whose blocks differ from those at the same position last
// time; size(i) is then msgs[i]'s, and hasImages says whether any holds an
// image (seen with the size, so the request spares a walk of its own).
func (h *historySizes) weigh(msgs []sessions.Message) int64 {
	if len(h.msgs) > len(msgs) {
		clear(h.msgs[len(msgs):]) // let go of the blocks
	}
	h.msgs = slices.Grow(h.msgs[:0], len(msgs))[:len(msgs)]
	var total int64
	h.images = false
	for i := range msgs {
		m, e := &msgs[i], &h.msgs[i]
		var blocks *sessions.Content
		if len(m.Content) > 0 {
			blocks = &m.Content[0]
		}
		if !e.ok || e.blocks != blocks || e.n != len(m.Content) {
			*e = msgSize{blocks: blocks, n: len(m.Content), size: llm.EstimateMessage(*m), ok: true, image: hasImage(m)}
		}
		total += e.size
		h.images = h.images || e.image
	}
	return total
}

// hasImages reports whether a message of the msgs last weighed holds an
// image block. A request made of them (pruned, merged, given the memory
// block) holds none when they hold none, and needs no llm.WithoutImages.
func (h *historySizes) hasImages() bool { return h.images }

func hasImage(m *sessions.Message) bool {
	for i := range m.Content {
		if m.Content[i].Type == sessions.BlockImage {
			return true
		}
	}
	return false
}

// size is the estimate of message i of the msgs last weighed.
func (h *historySizes) size(i int) int64 { return h.msgs[i].size }
