package sessions

import (
	"context"
	"fmt"
)

// ForkContext starts the empty transcript to as a branch of from at its
// head (seed 002's thread fork, channels.InheritFork): the messages of
// from's active context — what from's model is sent, the latest
// compaction's summary (as the user message the model sees) and every
// message after it, tool calls and results included — are appended to to
// in one Append, so a crash leaves all of them or none. The copies keep
// their roles, content and times; they carry no journal record ids or
// room history sequence (those belong to the parent's turns) and no usage
// (counted once, on the parent). It returns the number of messages copied
// and from's head entry id (the branch point); an empty from copies
// nothing. A to that already holds messages is refused: a fork happens
// once, when the session is created.
func ForkContext(ctx context.Context, from, to TranscriptLog) (copied int, head string, err error) {
	if n, _, err := to.Stats(ctx); err != nil {
		return 0, "", fmt.Errorf("sessions: fork: %w", err)
	} else if n > 0 {
		return 0, "", fmt.Errorf("sessions: fork: the new transcript already holds %d messages", n)
	}
	c, err := from.Context(ctx)
	if err != nil {
		return 0, "", fmt.Errorf("sessions: fork: parent context: %w", err)
	}
	if len(c.Messages) == 0 {
		return 0, c.LeafID, nil
	}
	msgs := make([]Message, len(c.Messages))
	for i, m := range c.Messages {
		m.Content = append([]Content(nil), m.Content...)
		m.RecordIDs, m.HistorySeq, m.Usage = nil, 0, nil
		msgs[i] = m
	}
	if _, err := to.Append(ctx, msgs...); err != nil {
		return 0, "", fmt.Errorf("sessions: fork: append: %w", err)
	}
	return len(msgs), c.LeafID, nil
}
