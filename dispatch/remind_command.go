package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// JobOptions are the settings of /remind.
type JobOptions struct {
	// Zone is the time zone times of day are read in (the room's or
	// agent's: jobs.timezone); nil is UTC.
	Zone func(agentID string) *time.Location
	// MaxPerRoom is the bound on a room's active jobs in force
	// (jobs.maxPerRoom, read at each add so a reload applies); nil or 0:
	// jobs.DefaultMaxPerRoom.
	MaxPerRoom func() int
	// Added is told of each job added (the scheduler wakes); may be nil.
	Added func()
	// Off refuses new jobs (jobs.enabled: false).
	Off bool
}

// zone is the time zone of agentID's jobs.
func (o JobOptions) zone(agentID string) *time.Location {
	if o.Zone != nil {
		if loc := o.Zone(agentID); loc != nil {
			return loc
		}
	}
	return time.UTC
}

const remindUsage = "Usage: /remind <when> <text>, e.g. /remind tomorrow 09:00 stand-up\n" +
	"When: " + jobs.WhenHelp + ".\n/remind list shows this chat's reminders; /remind cancel <id> removes one."

// privilegedRemind reports the uses of /remind that only a room's
// privileged members may make (listing and cancelling the room's jobs);
// anyone allowed to talk to the bot may set one.
func privilegedRemind(cmd, args string) bool {
	if cmd != "remind" {
		return false
	}
	first, _ := cutWord(args)
	switch strings.ToLower(first) {
	case "list", "cancel", "remove":
		return true
	}
	return false
}

// remind is /remind's answer: it sets a job for this chat's session, or
// lists or cancels the chat's jobs.
func (c commander) remind(ctx context.Context, w *work) string {
	d := c.d
	opts := d.opts.Jobs
	loc := opts.zone(w.AgentID)
	store := d.opts.Sessions.Jobs()
	room := w.In.ChatKey()
	first, rest := cutWord(w.Args)
	switch strings.ToLower(first) {
	case "", "help":
		return remindUsage
	case "list":
		js, err := store.ListJobs(ctx, sessions.JobFilter{ChatKey: room, Active: true})
		if err != nil {
			d.log.Warn("jobs unavailable", zap.String("chat_id", w.In.ChatID), zap.Error(err))
			return "Sorry, reminders are unavailable right now."
		}
		if len(js) == 0 {
			return "No reminders in this chat."
		}
		lines := []string{"Reminders in this chat:"}
		for _, j := range js {
			lines = append(lines, jobs.Describe(j, loc)+elsewhere(j.Target, w.In.Address))
		}
		return strings.Join(lines, "\n")
	case "cancel", "remove":
		id := strings.TrimSpace(rest)
		j, err := store.Job(ctx, id)
		if errors.Is(err, sessions.ErrNoJob) || (err == nil && j.Target.ChatKey() != room) {
			return fmt.Sprintf("No reminder %q in this chat (/remind list shows them).", id)
		}
		if err == nil {
			err = store.RemoveJob(ctx, id)
		}
		if err != nil && !errors.Is(err, sessions.ErrNoJob) {
			d.log.Warn("job not removed", zap.String("job_id", id), zap.Error(err))
			return "Sorry, reminders are unavailable right now."
		}
		d.log.Info("job removed", zap.String("job_id", id), zap.String("sender_id", w.In.SenderID))
		return cancelled(j, loc, d.opts.Now())
	}
	if opts.Off {
		return "Reminders are turned off on this gateway."
	}
	now := d.opts.Now()
	sched, text, err := jobs.ParseWhen(w.Args, now, loc)
	if err != nil {
		return "Cannot set the reminder: " + err.Error() + ".\n" + remindUsage
	}
	in := w.In
	j, err := jobs.NewJob(jobs.Spec{AgentID: w.AgentID, SessionKey: w.Key.String(), Text: text, Schedule: sched,
		Target: *jobTarget(w)}, now)
	if err == nil {
		err = jobs.Add(ctx, store, j, jobs.Limit(opts.MaxPerRoom))
	}
	switch {
	case errors.Is(err, jobs.ErrTooMany):
		return "This chat has too many reminders; cancel one first (/remind list)."
	case err != nil && isStorage(err):
		d.log.Warn("job not added", zap.String("chat_id", in.ChatID), zap.Error(err))
		return "Sorry, reminders are unavailable right now."
	case err != nil:
		return "Cannot set the reminder: " + err.Error() + "."
	}
	if opts.Added != nil {
		opts.Added()
	}
	d.log.Info("job added", zap.String("job_id", j.ID), zap.Stringer("session_key", w.Key), zap.String("sender_id", in.SenderID),
		zap.Time("next_at", j.NextAt), zap.Bool("recurring", sched.Recurring()))
	when := j.NextAt.In(loc).Format("Mon 2006-01-02 15:04 MST")
	if sched.Recurring() {
		return fmt.Sprintf("Recurring reminder %s set (%s, %s); next %s. /remind cancel %s stops it.", j.ID, sched.Cron, sched.TZ, when, j.ID)
	}
	return fmt.Sprintf("Reminder %s set for %s. /remind cancel %s removes it.", j.ID, when, j.ID)
}

// cancelled is /remind cancel's answer for job j, removed at now: a job
// that had ended already (a one-shot reminder that fired) or that was
// firing as it was removed may have arrived or still arrive, and the
// answer says so rather than promising that nothing will.
func cancelled(j sessions.Job, loc *time.Location, now time.Time) string {
	switch {
	case j.State == sessions.JobDone && !j.LastFiredAt.IsZero():
		return fmt.Sprintf("Reminder %s had already fired (%s); removed it.", j.ID, j.LastFiredAt.In(loc).Format("Mon 2006-01-02 15:04 MST"))
	case j.State != sessions.JobActive:
		return fmt.Sprintf("Reminder %s had already ended (%s); removed it.", j.ID, j.State)
	case j.ClaimOwner != "" && j.ClaimUntil.After(now):
		return fmt.Sprintf("Cancelled %s, but it was firing just now: this occurrence may still arrive.", j.ID)
	}
	return "Cancelled " + j.ID + "."
}

// elsewhere marks a job of the chat that arrives in another thread or
// topic than the one listing it (a forum's topics share their reminders'
// list): "" when it arrives here.
func elsewhere(t sessions.JobTarget, here channels.Address) string {
	switch {
	case t.ThreadID == here.ThreadID:
		return ""
	case t.ThreadID == "":
		return " (in the main chat)"
	case t.IsTopic:
		return " (in topic " + t.ThreadID + ")"
	}
	return " (in thread " + t.ThreadID + ")"
}
