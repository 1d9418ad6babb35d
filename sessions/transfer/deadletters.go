package transfer

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// CopyDeadLetters copies every dead letter of from into to (a letter to
// holds already is left as it is) and returns how many it sent. A letter
// a resubmit left half done (resubmitting) is refused with an error: a
// daemon started once on the source finishes it; copied as failed it could
// be resubmitted a second time.
func CopyDeadLetters(ctx context.Context, from, to sessions.DeadLetters) (int, error) {
	ls, err := from.DeadLetters(ctx)
	if err != nil {
		return 0, fmt.Errorf("sessions: copy dead letters: %w", err)
	}
	for _, l := range ls {
		if l.State != sessions.DeadFailed {
			return 0, fmt.Errorf("sessions: copy dead letters: letter %s is %s: start a daemon on the source once to finish its resubmit, then migrate", l.ID, l.State)
		}
	}
	keep := max(len(ls), sessions.DefaultDeadLetterKeep)
	for i := len(ls) - 1; i >= 0; i-- { // oldest first: the bound drops none of them
		if _, err := to.Bury(ctx, ls[i], keep); err != nil {
			return len(ls) - 1 - i, fmt.Errorf("sessions: copy dead letters: %w", err)
		}
	}
	return len(ls), nil
}
