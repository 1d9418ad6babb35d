package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gateway/gateway/sessions"
)

// CopyJobs copies the scheduled jobs of from into to (reminders and
// recurring tasks, whatever their state: the ended ones keep their note
// for `gateway jobs list`) and returns how many it wrote. Each keeps its
// id, schedule, next occurrence, fires and note, so the target's
// scheduler fires what the source's would have, once (an occurrence's id
// is the job's and the occurrence's, which the journal deduplicates). A
// scheduler's claim is not copied: it is a lease of the source's process.
// A job the target already holds the same is skipped (a second run copies
// nothing); one it holds otherwise is an error naming it, unless
// overwrite, which replaces it.
func CopyJobs(ctx context.Context, from, to sessions.Jobs, overwrite bool) (int, error) {
	src, err := from.ListJobs(ctx, sessions.JobFilter{})
	if err != nil {
		return 0, fmt.Errorf("sessions: copy jobs: %w", err)
	}
	n := 0
	for _, j := range src {
		j.ClaimOwner, j.ClaimUntil = "", time.Time{}
		err := to.AddJob(ctx, j)
		if errors.Is(err, sessions.ErrJobExists) {
			held, herr := to.Job(ctx, j.ID)
			if herr != nil {
				return n, fmt.Errorf("sessions: copy job %s: %w", j.ID, herr)
			}
			if sameJob(held, j) {
				continue
			}
			if !overwrite {
				return n, fmt.Errorf("sessions: copy jobs: the target holds another job %s (use --overwrite to replace it)", j.ID)
			}
			if err := sessions.CheckJob(j); err != nil { // refused after the removal, the target's would be lost
				return n, fmt.Errorf("sessions: copy job %s: %w", j.ID, err)
			}
			if err := to.RemoveJob(ctx, j.ID); err != nil && !errors.Is(err, sessions.ErrNoJob) {
				return n, fmt.Errorf("sessions: copy job %s: %w", j.ID, err)
			}
			err = to.AddJob(ctx, j)
		}
		if err != nil {
			return n, fmt.Errorf("sessions: copy job %s: %w", j.ID, err)
		}
		n++
	}
	return n, nil
}

// sameJob reports whether a and b are one job in the same state, claims
// aside, their clocks compared at microseconds (what PostgreSQL keeps).
func sameJob(a, b sessions.Job) bool {
	ja, errA := json.Marshal(jobForCompare(a))
	jb, errB := json.Marshal(jobForCompare(b))
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func jobForCompare(j sessions.Job) sessions.Job {
	j.ClaimOwner, j.ClaimUntil = "", time.Time{}
	for _, t := range []*time.Time{&j.NextAt, &j.LastFiredAt, &j.CreatedAt, &j.Schedule.At} {
		if !t.IsZero() {
			*t = t.UTC().Truncate(time.Microsecond)
		}
	}
	return j
}
