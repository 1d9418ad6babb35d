package openclaw

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// Statuses of a plan's Item after Apply.
const (
	// StatusImport: the key was (dry: would be) written.
	StatusImport = "import"
	// StatusPresent: the target holds the key already; it is left as it is
	// (an earlier import, or the gateway has served the key since).
	StatusPresent = "present"
	// StatusConflict: a session id of the key belongs to another key of
	// the target; the key is not written.
	StatusConflict = "conflict"
)

// Target is where Apply writes: the configured backend's importer (as
// `gateway storage migrate` writes) and its pairing state.
type Target struct {
	Sessions sessions.Importer
	Pairing  sessions.PairingState
	// Jobs is the backend's job store (nil: the plan's jobs are not
	// applied); MaxPerRoom bounds a room's active jobs (jobs.maxPerRoom,
	// 0: the default).
	Jobs       sessions.Jobs
	MaxPerRoom int
}

// Result counts what Apply did (or, dry, would do).
type Result struct {
	Keys      int `json:"keys"`
	Imported  int `json:"imported"`
	Present   int `json:"present"`
	Conflicts int `json:"conflicts"`
	// Messages are the transcript messages of the imported keys' current
	// sessions; Archived their archived sessions.
	Messages int `json:"messages"`
	Archived int `json:"archived"`
	// Approvals were added to the pairing state; ApprovalsPresent were
	// there already.
	Approvals        int `json:"approvals"`
	ApprovalsPresent int `json:"approvalsPresent"`
	// Jobs counts the plan's cron jobs: JobsImported were added as
	// gateway jobs, JobsPresent were there (an earlier import),
	// JobsSkipped have no gateway form (their items say why).
	Jobs         int  `json:"jobs"`
	JobsImported int  `json:"jobsImported"`
	JobsPresent  int  `json:"jobsPresent"`
	JobsSkipped  int  `json:"jobsSkipped"`
	DryRun       bool `json:"dryRun"`
}

// Apply writes p into t, or with dry only decides what it would write
// (every Item's Status is set either way). A key the target holds is
// left as it is, so a second run writes nothing. The caller holds the
// target's daemon lock.
func Apply(ctx context.Context, p *Plan, t Target, dry bool) (Result, error) {
	res := Result{DryRun: dry}
	for _, a := range p.Agents {
		if err := applyAgent(ctx, a, t.Sessions, dry, &res); err != nil {
			return res, err
		}
	}
	if s, ok := t.Sessions.(sessions.Syncer); ok && !dry && res.Imported > 0 {
		if err := s.Sync(ctx); err != nil {
			return res, fmt.Errorf("openclaw: import: %w", err)
		}
	}
	if err := applyApprovals(ctx, p.Approvals, t.Pairing, dry, &res); err != nil {
		return res, err
	}
	if t.Jobs != nil {
		if err := applyJobs(ctx, p, t, dry, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// applyJobs adds the mapped jobs the store lacks (the same id: JobID of
// OpenClaw's), so a second import adds none. A room with its maximum of
// active jobs skips the job, as /remind would refuse it.
func applyJobs(ctx context.Context, p *Plan, t Target, dry bool, res *Result) error {
	for i := range p.Jobs {
		it := &p.Jobs[i]
		res.Jobs++
		if it.Job == nil {
			it.Status = StatusSkipped
			res.JobsSkipped++
			continue
		}
		_, err := t.Jobs.Job(ctx, it.Job.ID)
		if err == nil {
			it.Status = StatusPresent
			res.JobsPresent++
			continue
		}
		if !errors.Is(err, sessions.ErrNoJob) {
			return fmt.Errorf("openclaw: import job %s: %w", it.SourceID, err)
		}
		err = nil
		if !dry {
			err = jobs.Add(ctx, t.Jobs, *it.Job, t.MaxPerRoom)
		}
		switch {
		case errors.Is(err, sessions.ErrJobExists):
			it.Status = StatusPresent
			res.JobsPresent++
		case errors.Is(err, jobs.ErrTooMany):
			it.Status, it.Why = StatusSkipped, "its room has jobs.maxPerRoom active jobs already"
			p.Report.add("cron_jobs.roomFull", "its room has jobs.maxPerRoom active jobs already: not imported")
			res.JobsSkipped++
		case err != nil:
			return fmt.Errorf("openclaw: import job %s: %w", it.SourceID, err)
		default:
			it.Status = StatusImport
			res.JobsImported++
		}
	}
	return nil
}

func applyAgent(ctx context.Context, a *AgentPlan, to sessions.Importer, dry bool, res *Result) error {
	have, err := to.ExportKeys(ctx, a.ID)
	if err != nil {
		return fmt.Errorf("openclaw: import %s: %w", a.ID, err)
	}
	present := map[string]bool{}
	owner := map[string]string{}
	for _, k := range have {
		present[k.Key] = true
		for _, r := range k.Refs() {
			owner[r.SessionID] = k.Key
		}
	}
	for i, k := range a.Keys {
		it := &a.Items[i]
		res.Keys++
		switch {
		case present[k.Key]:
			it.Status = StatusPresent
			res.Present++
			continue
		case slices.ContainsFunc(k.Refs(), func(r sessions.TranscriptRef) bool { o, ok := owner[r.SessionID]; return ok && o != k.Key }):
			it.Status = StatusConflict
			res.Conflicts++
			continue
		}
		it.Status = StatusImport
		res.Imported++
		res.Messages += it.Messages
		res.Archived += len(k.Archived)
		if dry {
			continue
		}
		kc := k
		kc.KeyState = k.KeyState.AtMicros()
		if err := to.ImportKey(ctx, a.ID, kc); err != nil {
			return fmt.Errorf("openclaw: import %s/%s: %w", a.ID, k.Key, err)
		}
		for _, r := range k.Refs() {
			owner[r.SessionID] = k.Key
		}
	}
	return nil
}

// applyApprovals adds the approvals the pairing state lacks (the same
// channel, account and sender).
func applyApprovals(ctx context.Context, list []pairstate.Approval, ps sessions.PairingState, dry bool, res *Result) error {
	byChannel := map[string][]pairstate.Approval{}
	var channels []string
	for _, a := range list {
		if _, ok := byChannel[a.Channel]; !ok {
			channels = append(channels, a.Channel)
		}
		byChannel[a.Channel] = append(byChannel[a.Channel], a)
	}
	slices.Sort(channels)
	for _, ch := range channels {
		// add may run more than once (a backend retrying the update): it
		// counts afresh each time, and the last run's counts are kept.
		var added, present int
		add := func(d *pairstate.Data) bool {
			added, present = 0, 0
			for _, a := range byChannel[ch] {
				if slices.ContainsFunc(d.Allowed, func(b pairstate.Approval) bool {
					return b.AccountID == a.AccountID && b.SenderID == a.SenderID
				}) {
					present++
					continue
				}
				d.Allowed = append(d.Allowed, a)
				added++
			}
			return added > 0
		}
		if dry {
			d, err := ps.LoadPairing(ctx, ch)
			if err != nil {
				return fmt.Errorf("openclaw: import pairing %s: %w", ch, err)
			}
			add(&d)
		} else if err := ps.UpdatePairing(ctx, ch, func(d *pairstate.Data) (bool, error) { return add(d), nil }); err != nil {
			return fmt.Errorf("openclaw: import pairing %s: %w", ch, err)
		}
		res.Approvals += added
		res.ApprovalsPresent += present
	}
	return nil
}
