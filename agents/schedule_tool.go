package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// JobOptions are the schedule tool's settings.
type JobOptions struct {
	// Zone is the time zone of agentID's jobs (jobs.timezone); nil: UTC.
	Zone func(agentID string) *time.Location
	// MaxPerRoom is the bound on a room's active jobs in force
	// (jobs.maxPerRoom, read at each add so a reload applies); nil or 0:
	// jobs.DefaultMaxPerRoom.
	MaxPerRoom func() int
	// Added is told of each job added (the scheduler wakes); may be nil.
	Added func()
	// Store holds the jobs (nil: Options.Sessions.Jobs()).
	Store sessions.Jobs
	// Off refuses new jobs (jobs.enabled: false).
	Off bool
}

// scheduleArgs are the schedule tool's arguments.
type scheduleArgs struct {
	Action string `json:"action"`
	When   string `json:"when"`
	Text   string `json:"text"`
	ID     string `json:"id"`
}

// scheduleTool lets the model set, list and cancel jobs of the turn's
// chat (issue 24): a job's text comes back into this session when due
// (as /remind's do). It acts for the turn's sender: it lists and cancels
// only the jobs that sender set (a room's privileged members see and
// cancel all with /remind list|cancel). Off unless tools.allow names it.
func (r *Runner) scheduleTool() tool {
	return tool{
		def: llm.Tool{
			Name: ScheduleToolName,
			Description: "Schedule a message to yourself in this chat: at the time given, text comes back to you here as a " +
				"message and you answer it then (a reminder, a recurring task). add needs when and text; list shows the " +
				"jobs the current user set here; cancel removes one of them by id. when: " + jobs.WhenHelp + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"action":{"type":"string","enum":["add","list","cancel"]},` +
				`"when":{"type":"string","description":"add: e.g. in 2 hours, tomorrow 09:00, every weekday at 08:30, cron 0 9 * * 1-5"},` +
				`"text":{"type":"string","description":"add: what should come back to you then, e.g. Remind the room of the stand-up"},` +
				`"id":{"type":"string","description":"cancel: the job id from add or list"}},` +
				`"required":["action"],"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args scheduleArgs
			if len(bytes.TrimSpace(raw)) == 0 {
				raw = json.RawMessage(`{}`)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&args); err != nil {
				return nil, toolErrorf("schedule: invalid arguments: %v (it takes action, when, text and id)", err)
			}
			if s.jobs == nil {
				return nil, toolErrorf("schedule: this turn has no chat (a subagent, or a message the API sent); nothing to schedule into")
			}
			return r.runSchedule(ctx, s, args)
		},
	}
}

// runSchedule performs args for the turn's chat and sender.
func (r *Runner) runSchedule(ctx context.Context, s *session, args scheduleArgs) (any, error) {
	o := r.opts.Jobs
	loc := time.UTC
	if o.Zone != nil {
		if z := o.Zone(s.agent.ID); z != nil {
			loc = z
		}
	}
	store := o.Store
	if store == nil {
		store = r.opts.Sessions.Jobs()
	}
	target := *s.jobs
	mine := func(j sessions.Job) bool {
		return j.Target.ChatKey() == target.ChatKey() && j.Target.SenderID == target.SenderID
	}
	switch strings.ToLower(strings.TrimSpace(args.Action)) {
	case "add":
		if o.Off {
			return nil, toolErrorf("schedule: scheduled jobs are turned off on this gateway")
		}
		now := r.now()
		sched, text, err := jobs.ParseWhen(strings.TrimSpace(args.When)+" "+args.Text, now, loc)
		if err != nil {
			return nil, toolErrorf("schedule: %v", err)
		}
		j, err := jobs.NewJob(jobs.Spec{AgentID: s.agent.ID, SessionKey: s.key.String(), Target: target, Text: text, Schedule: sched}, now)
		if err == nil {
			err = jobs.Add(ctx, store, j, jobs.Limit(o.MaxPerRoom))
		}
		if errors.Is(err, jobs.ErrTooMany) {
			return nil, toolErrorf("schedule: this chat has too many active jobs; cancel one first")
		}
		if err != nil {
			if errors.Is(err, sessions.ErrJobExists) || strings.HasPrefix(err.Error(), "jobs: add:") {
				return nil, fmt.Errorf("agents: schedule: %w", err)
			}
			return nil, toolErrorf("schedule: %v", err)
		}
		if o.Added != nil {
			o.Added()
		}
		s.log.Info("job added by the schedule tool", zap.String("job_id", j.ID), zap.Time("next_at", j.NextAt))
		return map[string]any{"ok": true, "id": j.ID, "next": j.NextAt.In(loc).Format(time.RFC3339), "recurring": sched.Recurring()}, nil
	case "list":
		js, err := store.ListJobs(ctx, sessions.JobFilter{ChatKey: target.ChatKey(), Active: true})
		if err != nil {
			return nil, fmt.Errorf("agents: schedule: %w", err)
		}
		out := []map[string]any{}
		for _, j := range js {
			if mine(j) {
				out = append(out, map[string]any{"id": j.ID, "next": j.NextAt.In(loc).Format(time.RFC3339),
					"schedule": scheduleOf(j.Schedule), "text": j.Text})
			}
		}
		return map[string]any{"jobs": out}, nil
	case "cancel":
		id := strings.TrimSpace(args.ID)
		j, err := store.Job(ctx, id)
		if errors.Is(err, sessions.ErrNoJob) || (err == nil && !mine(j)) {
			return nil, toolErrorf("schedule: no job %q set by this user in this chat", id)
		}
		if err == nil {
			err = store.RemoveJob(ctx, id)
		}
		if err != nil && !errors.Is(err, sessions.ErrNoJob) {
			return nil, fmt.Errorf("agents: schedule: %w", err)
		}
		return map[string]any{"ok": true, "cancelled": id}, nil
	case "":
		return nil, toolErrorf("schedule: action is required: add, list or cancel")
	}
	return nil, toolErrorf("schedule: unknown action %q: add, list or cancel", args.Action)
}

// scheduleOf describes a schedule for the model.
func scheduleOf(s sessions.JobSchedule) string {
	if s.Recurring() {
		return s.Cron + " (" + s.TZ + ")"
	}
	return "once"
}
