package llm

import (
	"math"

	"github.com/gateway/gateway/sessions"
)

// EstimateText estimates the tokens of s as chars/4 × 1.2 (SPEC §5), used
// only where a provider reports no usage and for compaction planning.
// "chars" are bytes: cheap, and for CJK text (3 bytes, about one token a
// character) closer to the truth than runes.
func EstimateText(s string) int64 {
	return estimateChars(int64(len(s)))
}

// TextBytes is about how many bytes of text make tokens tokens: the
// inverse of EstimateText's rate, for cutting text to a token budget.
func TextBytes(tokens int64) int64 {
	return tokens * 4 * 10 / 12
}

func estimateChars(n int64) int64 {
	if n == 0 {
		return 0
	}
	return int64(math.Ceil(float64(n) / 4 * 1.2))
}

// EstimateMessage estimates one message, content blocks and tool-call
// arguments included, plus a small per-message overhead.
func EstimateMessage(m sessions.Message) int64 {
	var n int64
	for _, c := range m.Content {
		switch c.Type {
		case sessions.BlockText:
			n += int64(len(c.Text))
		case sessions.BlockThinking:
			n += int64(len(c.Thinking))
		case sessions.BlockToolCall:
			n += int64(len(c.Name) + len(c.Arguments) + len(c.ID))
		case sessions.BlockImage:
			n += 4800 // ~1200 tokens, the usual order of an image
		}
	}
	return estimateChars(n) + 4
}

// EstimateMessages sums EstimateMessage over msgs.
func EstimateMessages(msgs []sessions.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += EstimateMessage(m)
	}
	return n
}

// EstimateRequest estimates the prompt tokens of req (system, messages, tools).
func EstimateRequest(req Request) int64 {
	n := EstimateText(req.System) + EstimateMessages(req.Messages)
	for _, t := range req.Tools {
		n += estimateChars(int64(len(t.Name) + len(t.Description) + len(t.Parameters)))
	}
	return n
}
