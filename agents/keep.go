package agents

import "fmt"

// What a compaction keeps verbatim (seed 000 keeps about 20 turns, seed
// 004 a history_limit of 40 messages, pi a token budget). The keep rule
// is three minimums, and the kept tail is the longest any of them asks
// for:
//
//   - keepRecentTokens: the earlier messages that fit in this many tokens
//     (estimated), the cut moved later so it falls on a real entry and
//     never between a tool call and its result;
//   - keepRecentTurns: the last N turns, a turn being a user message and
//     everything after it up to the next;
//   - keepRecentMessages: the last N messages, the cut moved earlier so a
//     kept tool result keeps its call (so N or a few more).
//
// A key left at 0 asks for nothing. agents.defaults.compaction with no
// key set keeps keepRecentTokens: 20000 (DefaultKeepRecentTokens); once
// a count is set there, tokens count only if keepRecentTokens is set too,
// so `keepRecentTurns: 20` alone keeps exactly the last 20 turns. An
// agent's compaction block that sets any key replaces the defaults' rule
// as a whole. Whatever the rule, the last user message and what follows
// it are always kept; when the rule keeps everything, a compaction that
// must happen (the window is full, or /compact) keeps only that last
// turn, as it always did.

// KeepRecent is an agent's keep rule: agents.list[].compaction.
type KeepRecent struct {
	KeepRecentTokens   int `mapstructure:"keepRecentTokens"`
	KeepRecentTurns    int `mapstructure:"keepRecentTurns"`
	KeepRecentMessages int `mapstructure:"keepRecentMessages"`
}

func (k KeepRecent) isZero() bool {
	return k.KeepRecentTokens == 0 && k.KeepRecentTurns == 0 && k.KeepRecentMessages == 0
}

// Validate refuses negative counts; the error names the key.
func (k KeepRecent) Validate() error {
	for _, f := range []struct {
		key string
		v   int
	}{{"keepRecentTokens", k.KeepRecentTokens}, {"keepRecentTurns", k.KeepRecentTurns}, {"keepRecentMessages", k.KeepRecentMessages}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d: must not be negative (0 keeps nothing by this measure)", f.key, f.v)
		}
	}
	return nil
}

// keep is the defaults' keep rule.
func (c Compaction) keep() KeepRecent {
	return KeepRecent{KeepRecentTokens: c.KeepRecentTokens, KeepRecentTurns: c.KeepRecentTurns, KeepRecentMessages: c.KeepRecentMessages}
}

// keepRule is the keep rule of agent a's sessions.
func (r *Runner) keepRule(a Agent) KeepRecent {
	if !a.Compaction.isZero() {
		return a.Compaction
	}
	return r.defaults.Compaction.keep()
}
