package transfer

import (
	"context"
	"fmt"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// CopyMemory copies the agents' notes of from into to, scope by scope, in
// the order they were added, and returns how many notes it wrote. A scope
// to already holds with the same texts in the same order is skipped (a
// second run copies nothing); one it holds with other notes is an error
// naming it, unless overwrite, which replaces it. The target numbers the
// notes again from 1 (the gaps of forgotten notes close) and keeps each
// note's last update time as both its times; a scope the target holds
// with the first of the source's notes (a copy interrupted part-way) is
// completed. The copy's limits are the store's bounds, so no note a
// config allowed is refused.
func CopyMemory(ctx context.Context, from, to sessions.Memory, overwrite bool) (int, error) {
	scopes, err := from.MemoryScopes(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("sessions: copy memory: %w", err)
	}
	lim := sessions.MemoryLimits{MaxNotes: sessions.MaxMemoryNotes, MaxNoteBytes: sessions.MaxMemoryNoteBytes}
	n := 0
	for _, info := range scopes {
		s := info.Scope
		src, err := from.Notes(ctx, s)
		if err != nil {
			return n, fmt.Errorf("sessions: copy memory %s: %w", s, err)
		}
		dst, err := to.Notes(ctx, s)
		if err != nil {
			return n, fmt.Errorf("sessions: copy memory %s: %w", s, err)
		}
		if len(dst) > 0 {
			if len(dst) <= len(src) && slices.Equal(texts(src[:len(dst)]), texts(dst)) {
				src = src[len(dst):] // the same notes, or the first of them (an interrupted copy): add the rest
			} else if !overwrite {
				return n, fmt.Errorf("sessions: copy memory: the target holds other notes in %s (use --overwrite to replace them)", s)
			} else if _, err := to.ForgetScope(ctx, s); err != nil {
				return n, fmt.Errorf("sessions: copy memory %s: %w", s, err)
			}
		}
		for _, note := range src {
			if _, err := to.AddNote(ctx, s, note.Text, note.UpdatedAt, lim); err != nil {
				return n, fmt.Errorf("sessions: copy memory %s note %d: %w", s, note.ID, err)
			}
			n++
		}
	}
	return n, nil
}

func texts(notes []sessions.MemoryNote) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.Text
	}
	return out
}
