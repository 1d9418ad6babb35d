package agents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// ErrNothingToCompact is returned by Compact when the session holds nothing
// before its last user message, or when key has no session yet.
var ErrNothingToCompact = &UserError{Msg: "Nothing to compact yet."}

// Compact compacts key's session now for someone outside the chat (the
// API, the CLI): CompactFor without a speaker.
func (r *Runner) Compact(ctx context.Context, agentID string, key routing.Key, instructions string) error {
	return r.CompactFor(ctx, agentID, key, instructions, nil)
}

// CompactFor compacts key's session now (/compact [instructions]) as sp
// asked in the chat: the memory flush before it has the scopes of a turn
// of sp (memory_flush.go; none without a speaker in a chat session whose
// agent keeps notes per person or room).
func (r *Runner) CompactFor(ctx context.Context, agentID string, key routing.Key, instructions string, sp *Speaker) error {
	s, err := r.open(agentID, key)
	if errors.Is(err, sessions.ErrNotFound) {
		// /compact as a chat's first message: no history at all.
		return ErrNothingToCompact
	}
	if err != nil {
		return err
	}
	r.setMemory(s, sp)
	if _, err = r.compact(ctx, s, instructions); err == nil {
		r.usage.compactions.WithLabelValues(CompactManual).Inc()
	}
	return err
}

// Causes of a compaction (gateway_compactions_total).
const (
	CompactManual    = "manual"    // /compact
	CompactThreshold = "threshold" // the context neared the window before a model call
	CompactOverflow  = "overflow"  // the provider refused the context as too long
)

// CompactionCauses are the causes gateway_compactions_total counts.
var CompactionCauses = []string{CompactManual, CompactThreshold, CompactOverflow}

// compactLogged runs an automatic compaction; a failure is logged and the
// turn goes on (pruning still bounds what is sent). It reports whether a
// compaction entry was written.
func (r *Runner) compactLogged(ctx context.Context, s *session, instructions, reason string, tokens int64) bool {
	start := time.Now()
	res, err := r.compact(ctx, s, instructions)
	switch {
	case errors.Is(err, ErrNothingToCompact):
		return false
	case err != nil:
		if ctx.Err() == nil {
			s.log.Error("compaction failed; continuing without it", zap.String("reason", reason), zap.Error(err))
		}
		return false
	}
	r.usage.compactions.WithLabelValues(reason).Inc()
	s.log.Info("session compacted", zap.String("reason", reason), zap.Int64("context_tokens", tokens),
		zap.Int64("tokens_before", res.TokensBefore), zap.Int64("tokens_after", res.TokensAfter),
		zap.Bool("summary_fallback", res.fallback), zap.Duration("took", time.Since(start)))
	return true
}

type compactResult struct {
	sessions.Compaction
	fallback bool
}

// compact summarises the part of the context before the kept tail and
// appends a compaction entry. The summary is bounded by the compaction
// timeout; when the model fails or times out the entry holds a plain note,
// so the session always shrinks.
func (r *Runner) compact(ctx context.Context, s *session, instructions string) (compactResult, error) {
	c, err := s.tr.Context(ctx)
	if err != nil {
		return compactResult{}, fmt.Errorf("agents: compact: load context: %w", err)
	}
	p, ok := planCompaction(c, r.keepRule(s.agent))
	if !ok {
		p, ok = planCompaction(c, KeepRecent{}) // the last turn alone
	}
	if !ok {
		return compactResult{}, ErrNothingToCompact
	}
	fctx, cancel := context.WithTimeout(ctx, r.defaults.compactionTimeout())
	r.flushMemory(fctx, s, p.summarize) // memory_flush.go: before the messages go
	cancel()
	sctx, cancel := context.WithTimeout(ctx, r.defaults.compactionTimeout())
	summary, fallback := summarize(sctx, r.summarizer(s), p.summarize, s.window, instructions)
	cancel()
	summary = boundSummary(summary, s.window)
	if ctx.Err() != nil {
		return compactResult{}, fmt.Errorf("agents: compact: %w", ctx.Err())
	}
	before := llm.EstimateMessages(c.Messages)
	after := llm.EstimateMessage(summaryMessage(summary)) + llm.EstimateMessages(c.Messages[p.firstKept:])
	comp := sessions.Compaction{Summary: summary, FirstKeptEntryID: p.firstKeptID, TokensBefore: before, TokensAfter: after}
	s.next = nil
	// From here the compaction is written whole: a stop (/stop, a
	// shutdown) arriving now no longer undoes it, so it is either not
	// there at all (stopped above) or there with its counters.
	ctx = context.WithoutCancel(ctx)
	if _, err := s.tr.AppendCompaction(ctx, comp); err != nil {
		return compactResult{}, fmt.Errorf("agents: compact: append: %w", err)
	}
	if _, err := s.st.Patch(ctx, s.key, func(e *sessions.Entry) error {
		e.CompactionCount++
		e.ContextTokens = after
		return nil
	}); err != nil {
		return compactResult{}, fmt.Errorf("agents: compact: update entry: %w", err)
	}
	return compactResult{Compaction: comp, fallback: fallback}, nil
}

// summaryMessage approximates how the session context presents a summary
// (for token accounting only).
func summaryMessage(summary string) sessions.Message {
	return sessions.UserText("The conversation history before this point was compacted into the following summary:\n<summary>\n"+
		summary+"\n</summary>", time.Time{})
}

// compactionPlan says what to summarise and where the kept tail starts.
type compactionPlan struct {
	summarize   []sessions.Message
	firstKept   int // index into the context's messages
	firstKeptID string
}

// planCompaction keeps the last user message and everything after it plus
// what the keep rule asks for of the turns before it (keep.go), and
// summarises the rest (the previous summary included, so it is folded into
// the new one). The cut never falls between a tool call and its result,
// and the first kept message is a real transcript entry. ok is false when
// nothing would be summarised.
func planCompaction(c sessions.Context, keep KeepRecent) (compactionPlan, bool) {
	msgs := c.Messages
	start := 0
	if c.Summary != "" {
		start = 1 // summarising only the old summary gains nothing
	}
	lastUser := -1
	for i := len(msgs) - 1; i >= start; i-- {
		if msgs[i].Role == sessions.RoleUser && entryID(c, i) != "" {
			lastUser = i
			break
		}
	}
	if lastUser <= start {
		return compactionPlan{}, false
	}
	cut := lastUser
	if keep.KeepRecentTokens > 0 {
		cut = min(cut, keepTokensCut(c, start, lastUser, int64(keep.KeepRecentTokens)))
	}
	if keep.KeepRecentTurns > 0 {
		cut = min(cut, keepTurnsCut(c, start, keep.KeepRecentTurns))
	}
	if keep.KeepRecentMessages > 0 {
		cut = min(cut, keepMessagesCut(c, start, keep.KeepRecentMessages))
	}
	if cut <= start {
		return compactionPlan{}, false
	}
	return compactionPlan{summarize: msgs[:cut], firstKept: cut, firstKeptID: entryID(c, cut)}, true
}

// keepTokensCut is where a tail of up to tokens (estimated) before
// lastUser starts, moved later onto a real entry that is not a tool result.
func keepTokensCut(c sessions.Context, start, lastUser int, tokens int64) int {
	msgs := c.Messages
	cut := lastUser
	var acc int64
	for i := lastUser - 1; i >= start; i-- {
		acc += llm.EstimateMessage(msgs[i])
		if acc > tokens {
			break
		}
		cut = i
	}
	for cut < lastUser && (msgs[cut].Role == sessions.RoleToolResult || entryID(c, cut) == "") {
		cut++
	}
	return cut
}

// keepTurnsCut is the user message that starts the last n turns (start
// when the context holds fewer).
func keepTurnsCut(c sessions.Context, start, n int) int {
	for i := len(c.Messages) - 1; i >= start; i-- {
		if c.Messages[i].Role == sessions.RoleUser && entryID(c, i) != "" {
			if n--; n == 0 {
				return i
			}
		}
	}
	return start
}

// keepMessagesCut is where the last n messages start, moved earlier onto
// a real entry that is not a tool result (so a kept result keeps its call).
func keepMessagesCut(c sessions.Context, start, n int) int {
	cut := max(len(c.Messages)-n, start)
	for cut > start && (c.Messages[cut].Role == sessions.RoleToolResult || entryID(c, cut) == "") {
		cut--
	}
	return cut
}

func entryID(c sessions.Context, i int) string {
	if i < len(c.EntryIDs) {
		return c.EntryIDs[i]
	}
	return ""
}

// summarizer returns a function making one summary model call, down the
// session's model chain as a turn's calls go (fallback.go): a summary
// the primary cannot write while it is down is the fallback's to write,
// not a plain note that loses the history for good.
func (r *Runner) summarizer(s *session) summarizeFunc {
	return func(ctx context.Context, prompt string) (string, error) {
		req := llm.Request{Model: s.model, System: summarySystemPrompt,
			Messages: []sessions.Message{sessions.UserText(prompt, r.now())}}
		m, err := r.stream(ctx, s, req, false, nil)
		if err != nil {
			return "", err
		}
		if m.Usage != nil {
			s.st.AddCounters(s.key, sessions.Counters{InputTokens: m.Usage.Input, OutputTokens: m.Usage.Output,
				TotalTokens: m.Usage.Input + m.Usage.Output})
		}
		return m.Text(), nil
	}
}
