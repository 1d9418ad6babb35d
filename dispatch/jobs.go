package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Scheduled jobs (issue 24) arrive here when due: DeliverJob turns one
// occurrence into an inbound message of the job's session, journaled and
// run like any other, so the agent answers it in the room, through the
// outbox, inside the room's and the job setter's limits and budgets, and
// a crash at any point resumes it as the journal resumes every message.
// The occurrence's id is the message id: a repeat (a scheduler that died
// before settling) is a duplicate the journal drops.

// Errors of DeliverJob, for the scheduler's assembler.
var (
	// ErrJobNoRoom: the job's account is not served (removed from the
	// config): the room cannot take it.
	ErrJobNoRoom = errors.New("no adapter serves the job's account")
	// ErrJobThrottled: the limits refused the occurrence (the room got
	// their notice, as a member's message would).
	ErrJobThrottled = errors.New("refused by the limits")
	// ErrJobRevoked: the access policy in force no longer admits the
	// job's setter in its room (taken off allowFrom, the room switched
	// off): the occurrence is not delivered.
	ErrJobRevoked = errors.New("refused by the access policy")
)

// JobInbound is the inbound message occurrence id of job j (due at at)
// becomes: from the job's setter, in its room, addressed to its agent,
// the text framed so the agent knows it is a scheduled job and not the
// setter speaking now, with the due time in loc (the job's zone, so the
// agent speaks of the time the setter asked for).
func JobInbound(j sessions.Job, at time.Time, loc *time.Location, id string, now time.Time) channels.Inbound {
	t := j.Target
	setter := t.SenderName
	if setter == "" {
		setter = "the operator"
	}
	kind := "reminder"
	if j.Schedule.Recurring() {
		kind = "recurring job (" + j.Schedule.Cron + ")"
	}
	text := fmt.Sprintf("[Scheduled %s %s set by %s, due %s] %s", kind, j.ID, setter,
		at.In(loc).Format("2006-01-02 15:04 MST"), j.Text)
	return channels.Inbound{
		Address:  jobAddress(t),
		Agent:    j.AgentID,
		ChatType: channels.ChatType(t.ChatType), GuildID: t.GuildID, SenderID: t.SenderID, SenderName: t.SenderName,
		CaseSensitive: t.CaseSensitive, Mentioned: true, MessageID: id, Text: text, Time: now,
	}
}

// jobZone is the zone job j's times are told in: its schedule's (a cron
// job's tz), else its agent's (jobs.timezone), as /remind read them.
func (d *Dispatcher) jobZone(j sessions.Job) *time.Location {
	if j.Schedule.TZ != "" {
		if loc, err := jobs.Location(j.Schedule.TZ); err == nil {
			return loc
		}
	}
	return d.opts.Jobs.zone(j.AgentID)
}

// jobAddress is the room (and thread or topic) job target t delivers to.
func jobAddress(t sessions.JobTarget) channels.Address {
	return channels.Address{Channel: t.Channel, AccountID: t.AccountID, ChatID: t.ChatID, ThreadID: t.ThreadID, IsTopic: t.IsTopic}
}

// DeliverJob journals occurrence id of job j into its session and queues
// it. It returns nil once the occurrence is durably accepted (or was
// already: a repeat), ErrJobNoRoom when no adapter serves the job's
// account, ErrJobThrottled when the limits refuse it, ErrJobRevoked when
// the access policy in force refuses its setter (jobAdmitted), and another
// error when the journal cannot take it now (retry later).
func (d *Dispatcher) DeliverJob(ctx context.Context, j sessions.Job, at time.Time, id string) error {
	if d.closing.Load() {
		return errors.New("dispatch: job: shutting down")
	}
	if d.adapter(j.Target.Channel, j.Target.AccountID) == nil {
		return fmt.Errorf("dispatch: job %s: %w (%s/%s)", j.ID, ErrJobNoRoom, j.Target.Channel, j.Target.AccountID)
	}
	key, err := routing.Parse(j.SessionKey)
	if err != nil {
		return fmt.Errorf("dispatch: job %s: session key: %w", j.ID, err)
	}
	in := JobInbound(j, at, d.jobZone(j), id, d.opts.Now())
	if ok, reason := d.jobAdmitted(d.rt.Load(), in); !ok {
		d.log.Warn("job occurrence refused: the access policy in force no longer admits its setter",
			zap.String("job_id", j.ID), zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID),
			zap.String("sender_id", in.SenderID), zap.String("reason", reason))
		return fmt.Errorf("dispatch: job %s: %w (%s)", j.ID, ErrJobRevoked, reason)
	}
	w := &work{RecordID: RecordID(in), AgentID: j.AgentID, Key: key,
		chatMessage: chatMessage{In: in}, recordState: recordState{AcceptedAt: d.opts.Now()}}
	if d.throttled(ctx, w) {
		return fmt.Errorf("dispatch: job %s: %w", j.ID, ErrJobThrottled)
	}
	w.HistoryMark = d.history.mark(in)
	payload, err := json.Marshal(envelope{Inbound: &in, History: w.HistoryMark})
	if err != nil {
		d.releaseHolds(w)
		return fmt.Errorf("dispatch: job %s: encode: %w", j.ID, err)
	}
	dup, err := d.accept(ctx, sessions.Record{ID: w.RecordID, AgentID: j.AgentID, SessionKey: key.String(),
		Payload: payload, AcceptedAt: w.AcceptedAt})
	if err != nil || dup {
		d.releaseHolds(w)
	}
	if err != nil {
		d.recovery.acceptFailed(w, err)
		return fmt.Errorf("dispatch: job %s: journal: %w", j.ID, err)
	}
	if dup {
		d.log.Info("job occurrence already delivered", zap.String("job_id", j.ID), zap.String("record_id", w.RecordID))
		return nil
	}
	d.opts.Metrics.Inbound.WithLabelValues(in.Channel).Inc()
	if d.recovery.accepted(w.RecordID) {
		d.enqueue(ctx, w)
	}
	return nil
}

// jobAdmitted asks the policy in force (rt.Admits) whether it admits the
// setter of a job occurrence in its room: a reminder is its setter's
// message, delivered later, and a message from someone the policy does
// not admit never reaches an agent. A job the operator set (the CLI, the
// API: no sender) is judged by its room alone in a group and is not asked
// about in a DM, where the policy only knows senders.
func (d *Dispatcher) jobAdmitted(rt *Runtime, in channels.Inbound) (bool, string) {
	if rt.Admits == nil || (in.SenderID == "" && in.ChatType == channels.Direct) {
		return true, ""
	}
	return rt.Admits(in)
}

// jobOccurrence returns the job id of a journal record id that is a job
// occurrence's (RecordID of JobInbound: channel:account:chat:job:<id>:<unix>).
func jobOccurrence(recordID string) (string, bool) {
	i := strings.LastIndex(recordID, ":job:")
	if i < 0 {
		return "", false
	}
	id, unix, ok := strings.Cut(recordID[i+len(":job:"):], ":")
	if !ok || id == "" || strings.Contains(unix, ":") {
		return "", false
	}
	if _, err := strconv.ParseInt(unix, 10, 64); err != nil {
		return "", false
	}
	return id, true
}

// jobGivenUp tells Options.JobGivenUp of the jobs whose occurrences dead
// letter dl gave up because their room refuses the bot (buryReply). A
// turn given up (the model kept failing, the process kept dying) or a
// reply that could not be sent for another reason (a timeout, a server
// error) leaves the job as it is: a daily job is not ended for good by
// one bad morning; its next occurrence is tried.
func (d *Dispatcher) jobGivenUp(ctx context.Context, dl sessions.DeadLetter) {
	if d.opts.JobGivenUp == nil {
		return
	}
	var ids []string
	if dl.Record != nil {
		ids = append(ids, dl.Record.ID)
	}
	if dl.Reply != nil {
		ids = append(ids, dl.Reply.Records...)
	}
	for _, rid := range ids {
		if job, ok := jobOccurrence(rid); ok {
			d.opts.JobGivenUp(context.WithoutCancel(ctx), job, dl.Reason)
		}
	}
}

// jobTarget is the room and sender of chat work w, where the schedule
// tool's jobs go (nil for internal work: no chat).
func jobTarget(w *work) *sessions.JobTarget {
	if w == nil || w.Agent != nil || w.In.Channel == "" || w.In.ChatID == "" {
		return nil
	}
	in := w.In
	return &sessions.JobTarget{Channel: in.Channel, AccountID: in.AccountID, ChatID: in.ChatID, ChatType: string(in.ChatType),
		ThreadID: in.ThreadID, IsTopic: in.IsTopic, GuildID: in.GuildID, CaseSensitive: in.CaseSensitive,
		SenderID: in.SenderID, SenderName: in.SenderName}
}
