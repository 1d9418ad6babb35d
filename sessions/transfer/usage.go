package transfer

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/sessions"
)

// The usage ledger moves through the seam's UsageLog on both sides.

// usageCopyBatch is how many rows CopyUsage records at once.
const usageCopyBatch = 1000

// CopyUsage copies every ledger row of from that to lacks (by agent and
// Ref), so running it again, or after `gateway usage rebuild` on the
// target, adds nothing twice. It returns the rows written.
func CopyUsage(ctx context.Context, from, to sessions.UsageLog) (int, error) {
	have := map[string]map[sessions.UsageRef]bool{}
	var batch []sessions.UsageRow
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := to.Record(ctx, batch...); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	err := from.Rows(ctx, sessions.UsageFilter{}, func(r sessions.UsageRow) error {
		refs, ok := have[r.AgentID]
		if !ok {
			var err error
			if refs, err = to.Refs(ctx, r.AgentID); err != nil {
				return err
			}
			have[r.AgentID] = refs
		}
		if refs[r.Ref()] {
			return nil
		}
		refs[r.Ref()] = true
		r.At = r.At.UTC()
		batch = append(batch, r)
		if len(batch) >= usageCopyBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return n, fmt.Errorf("sessions: copy usage: %w", err)
	}
	return n, nil
}
