package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Staged summarisation (SPEC §5).
const (
	baseChunkRatio = 0.4  // share of the window one summarised chunk may take
	minChunkRatio  = 0.15 // used when messages are large
	safetyMargin   = 1.2  // estimates are multiplied by this before fitting
	// A message larger than this share of the window is "oversized": the
	// fallback summarises without it.
	oversizedShare = 0.5
	// Room kept in a chunk for the prompt around it and the answer.
	summaryOverhead = 4096
	// maxToolResultChars bounds one tool result in the summariser's input.
	maxToolResultChars = 4000
)

const summarySystemPrompt = "You summarise conversations so that they can continue later without the full history. " +
	"Keep what matters for continuing: the user's goals and requests, decisions and their reasons, facts learned, " +
	"names, ids, numbers and file paths, tool results that matter, and open tasks or questions. " +
	"If the conversation starts with an earlier summary, fold it in. Write plain, concise prose or bullets, with no preamble."

// summarizeFunc makes one summary model call.
type summarizeFunc func(ctx context.Context, prompt string) (string, error)

// summarize summarises msgs, staged when they exceed a chunk (the partial
// summaries joined when their merge fails). It falls back to summarising
// without oversized messages and finally to a plain note;
// fallback reports that the model's summary is incomplete or missing.
func summarize(ctx context.Context, call summarizeFunc, msgs []sessions.Message, window int64, instructions string) (summary string, fallback bool) {
	s, complete, err := summarizeStaged(ctx, call, msgs, window, instructions)
	if err == nil {
		return s, !complete
	}
	if ctx.Err() == nil {
		var kept []sessions.Message
		var notes []string
		for _, m := range msgs {
			if t := llm.EstimateMessage(m); float64(t)*safetyMargin > float64(window)*oversizedShare {
				notes = append(notes, fmt.Sprintf("[a %s message of about %d tokens was left out of this summary]", m.Role, t))
				continue
			}
			kept = append(kept, m)
		}
		if len(notes) > 0 && len(kept) > 0 {
			if s, _, err := summarizeStaged(ctx, call, kept, window, instructions); err == nil {
				return s + "\n\n" + strings.Join(notes, "\n"), true
			}
		}
	}
	return plainNote(msgs), true
}

// maxSummaryShare is the largest share of the window a stored summary
// takes (boundSummary).
const maxSummaryShare = 0.2

// summaryCutNote ends a summary boundSummary cut.
const summaryCutNote = "\n\n[The rest of this summary was cut: it was too long for the context window.]"

// boundSummary cuts a summary larger than maxSummaryShare of the window
// (estimated) to that size, on a line or character boundary, and notes
// the cut. A model looping while it summarises (a local model repeating
// itself to its output limit) returns more than the window holds; stored
// whole, that summary goes first in every request, cannot fit, and is
// left out of the next summary as oversized, losing what it said.
func boundSummary(summary string, window int64) string {
	limit := int64(float64(window) * maxSummaryShare)
	if llm.EstimateText(summary) <= limit {
		return summary
	}
	n := int(llm.TextBytes(limit)) - len(summaryCutNote)
	cut := runePrefix(summary, n)
	if i := strings.LastIndexByte(cut, '\n'); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " \n") + summaryCutNote
}

// plainNote is the summary of last resort.
func plainNote(msgs []sessions.Message) string {
	return fmt.Sprintf("Summary unavailable: %d earlier messages (about %d tokens) were compacted without a summary. "+
		"They are kept in the session transcript.", len(msgs), llm.EstimateMessages(msgs))
}

// summarizeStaged summarises msgs in chunks and merges the partial
// summaries. A chunk the model fails to summarise is left out with a
// note (once ctx ends, every chunk left is, and there is no merge); when
// the merge fails (its prompt too long, an empty answer) the partial
// summaries joined in order are the summary. complete is false then.
func summarizeStaged(ctx context.Context, call summarizeFunc, msgs []sessions.Message, window int64, instructions string) (summary string, complete bool, err error) {
	if len(msgs) == 0 {
		return "", false, errors.New("nothing to summarise")
	}
	maxChunk := int64(float64(window)*chunkRatio(msgs, window)) - summaryOverhead
	maxChunk = max(maxChunk, 1024)
	chunks := chunkMessages(msgs, maxChunk)
	if len(chunks) == 1 {
		s, err := summarizeOnce(ctx, call, summaryPrompt(chunks[0], instructions, 0, 1))
		return s, err == nil, err
	}
	parts := make([]string, 0, len(chunks))
	var notes []string // the parts that could not be summarised
	for i, ch := range chunks {
		s, err := summarizeOnce(ctx, call, summaryPrompt(ch, instructions, i+1, len(chunks)))
		if err != nil && ctx.Err() != nil {
			if len(parts) == 0 {
				return "", false, fmt.Errorf("chunk %d of %d: %w", i+1, len(chunks), err)
			}
			// Out of time (compaction.timeoutSeconds): the parts done
			// are kept, the rest noted.
			var left []sessions.Message
			for _, c := range chunks[i:] {
				left = append(left, c...)
			}
			notes = append(notes, fmt.Sprintf("[parts %d to %d of %d of the conversation (%d messages, about %d tokens) were left out of this summary: the compaction ran out of time]",
				i+1, len(chunks), len(chunks), len(left), llm.EstimateMessages(left)))
			break
		}
		if err != nil {
			// One part refused (a content filter, an oversized message)
			// loses that part only.
			notes = append(notes, fmt.Sprintf("[part %d of %d of the conversation (%d messages, about %d tokens) was left out of this summary: summarising it failed]",
				i+1, len(chunks), len(ch), llm.EstimateMessages(ch)))
			continue
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "", false, errors.New("no part of the conversation could be summarised")
	}
	withNotes := func(s string) string {
		if len(notes) == 0 {
			return s
		}
		return s + "\n\n" + strings.Join(notes, "\n")
	}
	var b strings.Builder
	b.WriteString("Merge these partial summaries of one conversation, in order, into one summary. Keep every decision, fact, id and open task.\n")
	if instructions != "" {
		b.WriteString("Focus: " + instructions + "\n")
	}
	for i, p := range parts {
		fmt.Fprintf(&b, "\n<partial index=\"%d\">\n%s\n</partial>\n", i+1, p)
	}
	if ctx.Err() == nil { // else no time is left for the merge
		if s, err := summarizeOnce(ctx, call, b.String()); err == nil {
			return withNotes(s), len(notes) == 0, nil
		}
	}
	return withNotes("Partial summaries of the conversation, in order:\n\n" + strings.Join(parts, "\n\n")), false, nil
}

func summarizeOnce(ctx context.Context, call summarizeFunc, prompt string) (string, error) {
	s, err := call(ctx, prompt)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty summary")
	}
	return s, nil
}

// chunkRatio is 0.4 of the window per chunk, lowered towards 0.15 when the
// average message is large (so a chunk still holds several messages).
func chunkRatio(msgs []sessions.Message, window int64) float64 {
	avg := float64(llm.EstimateMessages(msgs)) / float64(len(msgs)) * safetyMargin
	if share := avg / float64(window); share > 0.1 {
		return max(minChunkRatio, baseChunkRatio-2*(share-0.1))
	}
	return baseChunkRatio
}

// chunkMessages splits msgs into runs whose estimate × safety margin fits
// maxChunk; a tool result stays with the call before it; a single message
// larger than a chunk forms its own chunk.
func chunkMessages(msgs []sessions.Message, maxChunk int64) [][]sessions.Message {
	var out [][]sessions.Message
	var cur []sessions.Message
	var size float64
	for _, m := range msgs {
		t := float64(llm.EstimateMessage(m)) * safetyMargin
		if len(cur) > 0 && size+t > float64(maxChunk) && m.Role != sessions.RoleToolResult {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, m)
		size += t
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// summaryPrompt renders msgs as a plain transcript for the summariser.
func summaryPrompt(msgs []sessions.Message, instructions string, part, parts int) string {
	var b strings.Builder
	if parts > 1 {
		fmt.Fprintf(&b, "Summarise part %d of %d of this conversation.\n", part, parts)
	} else {
		b.WriteString("Summarise this conversation.\n")
	}
	if instructions != "" {
		b.WriteString("Focus: " + instructions + "\n")
	}
	b.WriteString("\n<conversation>\n")
	for _, m := range msgs {
		writeMessage(&b, m)
	}
	b.WriteString("</conversation>\n")
	return b.String()
}

func writeMessage(b *strings.Builder, m sessions.Message) {
	switch m.Role {
	case sessions.RoleUser:
		b.WriteString("User: ")
	case sessions.RoleAssistant:
		b.WriteString("Assistant: ")
	case sessions.RoleToolResult:
		fmt.Fprintf(b, "Tool result (%s): ", m.ToolName)
	}
	for _, c := range m.Content {
		switch c.Type {
		case sessions.BlockText:
			t := c.Text
			if m.Role == sessions.RoleToolResult && len(t) > maxToolResultChars {
				t = t[:maxToolResultChars] + " […]"
			}
			b.WriteString(t)
		case sessions.BlockToolCall:
			fmt.Fprintf(b, "\n[called %s %s]", c.Name, c.Arguments)
		case sessions.BlockImage:
			b.WriteString("[image]")
		}
	}
	b.WriteString("\n")
}
