package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// ErrRoomGone is wrapped by a Deliver error when the room will never take
// the job again (the bot left it, its account is gone): the job is
// disabled, not retried.
var ErrRoomGone = errors.New("room refuses delivery")

// ErrRefused is wrapped by a Deliver error that refuses one occurrence on
// purpose (the limits, an access policy that no longer admits the job's
// setter or room, an agent no longer configured): it is settled as not delivered, its reason in the
// job's note, and not retried; a recurring job moves to its next
// occurrence.
var ErrRefused = errors.New("occurrence refused")

// Deliver hands occurrence at of job j to its session. id is the
// occurrence's id (OccurrenceID): a repeat with the same id must be
// dropped by the receiver, so a scheduler that dies between delivering
// and settling delivers nothing twice. A nil error means the occurrence is
// durably accepted.
type Deliver func(ctx context.Context, j sessions.Job, at time.Time, id string) error

// OccurrenceID is the id of job id's occurrence at (unique per job and
// occurrence, stable across processes).
func OccurrenceID(id string, at time.Time) string {
	return "job:" + id + ":" + strconv.FormatInt(at.Unix(), 10)
}

// Options configure a Scheduler.
type Options struct {
	Store   sessions.Jobs
	Deliver Deliver
	// Owner names this scheduler in claims (the replica id); it must
	// differ between the processes sharing a store.
	Owner string
	// Poll is the longest sleep between two claims (default 1 s): jobs
	// another process added are seen within it.
	Poll time.Duration
	// Lease is how long a claim holds a job (default 1 min): a scheduler
	// that died holding one leaves its jobs for that long.
	Lease time.Duration
	// Grace is how late an occurrence may still be delivered (default 10
	// min); later ones are missed.
	Grace time.Duration
	// Batch bounds the jobs claimed at once (default 100).
	Batch int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	Log *zap.Logger
	// Missed, when set, is told of a one-shot job that ended missed (its
	// occurrence past the grace window), once, after its settle under
	// this scheduler's claim, so its room can be told
	// (dispatch.Dispatcher.NoteJobMissed). A recurring job's missed
	// occurrences are not told: its next one comes.
	Missed func(ctx context.Context, j sessions.Job, due time.Time)
	// Observe, when set, is told each outcome ("fired", "missed",
	// "disabled", "failed") and, for "fired", how late the delivery
	// was after the occurrence.
	Observe func(outcome string, late time.Duration)
}

// Defaults of Options.
const (
	DefaultPoll  = time.Second
	DefaultLease = time.Minute
	DefaultGrace = 10 * time.Minute
	DefaultBatch = 100
)

// Scheduler fires due jobs. Run is its loop; Tick one pass of it.
type Scheduler struct {
	opts Options
	log  *zap.Logger
	wake chan struct{}

	mu    sync.Mutex // guards grace and poll
	grace time.Duration
	poll  time.Duration
}

// New returns a Scheduler; Run starts it.
func New(opts Options) (*Scheduler, error) {
	if opts.Store == nil || opts.Deliver == nil || opts.Owner == "" {
		return nil, errors.New("jobs: scheduler needs a store, a deliver function and an owner")
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &Scheduler{opts: opts, log: log.With(zap.String("component", "jobs")), wake: make(chan struct{}, 1), grace: opts.Grace, poll: opts.Poll}, nil
}

// SetGrace changes the grace window (a reloaded config).
func (s *Scheduler) SetGrace(d time.Duration) {
	if d <= 0 {
		d = DefaultGrace
	}
	s.mu.Lock()
	s.grace = d
	s.mu.Unlock()
}

// SetPoll changes the longest sleep between two claims (a reloaded
// config); the sleep running now ends at its old length.
func (s *Scheduler) SetPoll(d time.Duration) {
	if d <= 0 {
		d = DefaultPoll
	}
	s.mu.Lock()
	s.poll = d
	s.mu.Unlock()
}

// PollInterval is the longest sleep between two claims in force.
func (s *Scheduler) PollInterval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.poll
}

// GraceWindow is how late an occurrence may be delivered, in force.
func (s *Scheduler) GraceWindow() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grace
}

// Wake makes Run claim at once (a job was added in this process).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due jobs until ctx ends, sleeping until the next is due (at
// most Poll). A failing store is logged and retried at the next poll. It
// returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.wake:
		}
		next, err := s.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("jobs: claim failed", zap.Error(err))
		}
		sleep := s.PollInterval()
		if !next.IsZero() {
			sleep = min(sleep, max(next.Sub(s.opts.Now()), 0))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(sleep)
	}
}

// Tick claims the jobs due now and handles each, until none is due, and
// returns when the next falls due (zero: none known).
func (s *Scheduler) Tick(ctx context.Context) (time.Time, error) {
	for {
		now := s.opts.Now()
		claimed, next, err := s.opts.Store.ClaimDueJobs(ctx, now, s.opts.Owner, s.opts.Lease, s.opts.Batch)
		if err != nil {
			return time.Time{}, fmt.Errorf("jobs: claim: %w", err)
		}
		var done []outcome
		for _, j := range claimed {
			if ctx.Err() != nil {
				break // the claims left run out; the next scheduler fires them
			}
			if o, ok := s.handle(ctx, j); ok {
				done = append(done, o)
			}
		}
		s.settle(ctx, done)
		if ctx.Err() != nil {
			return time.Time{}, nil
		}
		if len(claimed) < s.opts.Batch {
			return next, nil
		}
	}
}

// outcome is a handled occurrence waiting for its settle.
type outcome struct {
	job  sessions.Job // as claimed
	due  time.Time    // the occurrence handled
	st   sessions.JobSettled
	what string // fired, missed, disabled, refused
	late time.Duration
	log  *zap.Logger
}

// handle delivers or misses the claimed job j's due occurrence and
// returns how to settle it (false: leave the claim to run out).
func (s *Scheduler) handle(ctx context.Context, j sessions.Job) (outcome, bool) {
	now := s.opts.Now()
	log := s.log.With(zap.String("job_id", j.ID), zap.String("agent_id", j.AgentID), zap.String("session_key", j.SessionKey))
	due, skipped, err := Latest(j.Schedule, j.NextAt, now)
	if err != nil {
		return outcome{st: sessions.JobSettled{ID: j.ID, JobSettle: sessions.JobSettle{State: sessions.JobDisabled, NextAt: j.NextAt,
			Note: "disabled: its schedule no longer reads: " + err.Error()}}, what: "disabled", late: 0, log: log}, true
	}
	next := nextAfter(j.Schedule, due, now)
	if late := now.Sub(due); late > s.GraceWindow() {
		note := fmt.Sprintf("missed the occurrence due at %s: %s late, past the grace window of %s",
			due.UTC().Format(time.RFC3339), late.Round(time.Second), s.GraceWindow())
		if skipped > 0 {
			note += fmt.Sprintf(" (and %d before it)", skipped)
		}
		st := sessions.JobSettle{State: sessions.JobMissed, NextAt: due, Note: note}
		if !next.IsZero() {
			st.State, st.NextAt = sessions.JobActive, next
		}
		log.Warn("job missed", zap.Time("due", due), zap.Duration("late", late))
		return outcome{job: j, due: due, st: sessions.JobSettled{ID: j.ID, JobSettle: st}, what: "missed", late: 0, log: log}, true
	}
	if !s.stillClaimed(ctx, j, log) {
		return outcome{}, false
	}
	err = s.opts.Deliver(ctx, j, due, OccurrenceID(j.ID, due))
	switch {
	case errors.Is(err, ErrRoomGone):
		log.Error("job disabled: its room refuses delivery", zap.Error(err))
		return outcome{st: sessions.JobSettled{ID: j.ID, JobSettle: sessions.JobSettle{State: sessions.JobDisabled, NextAt: due,
			Note: "disabled: " + err.Error()}}, what: "disabled", late: 0, log: log}, true
	case errors.Is(err, ErrRefused):
		log.Warn("job occurrence refused", zap.Time("due", due), zap.Error(err))
		st := sessions.JobSettle{State: sessions.JobDone, NextAt: due, Note: "not delivered at " + due.UTC().Format(time.RFC3339) + ": " + err.Error()}
		if !next.IsZero() {
			st.State, st.NextAt = sessions.JobActive, next
		}
		return outcome{st: sessions.JobSettled{ID: j.ID, JobSettle: st}, what: "refused", late: 0, log: log}, true
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("job delivery failed; retried when its claim runs out", zap.Error(err))
			s.observe("failed", 0)
		}
		return outcome{}, false
	}
	st := sessions.JobSettle{Fired: due, State: sessions.JobDone, NextAt: due}
	if skipped > 0 {
		st.Note = fmt.Sprintf("%d occurrences before %s were missed while the gateway was down", skipped, due.UTC().Format(time.RFC3339))
	}
	if !next.IsZero() {
		st.State, st.NextAt = sessions.JobActive, next
	}
	late := s.opts.Now().Sub(due)
	log.Info("job fired", zap.Time("due", due), zap.Duration("late", late))
	return outcome{st: sessions.JobSettled{ID: j.ID, JobSettle: st}, what: "fired", late: late, log: log}, true
}

// stillClaimed reads claimed job j again just before its delivery and
// reports whether it is still there, active, due at the same time and
// held by this scheduler. A batch's jobs are delivered one after the
// other, each a journal write, so a job cancelled (/remind cancel, the
// CLI, the API) after the claim would otherwise still arrive after its
// setter was told it was cancelled. A store that cannot answer leaves
// the claim to run out (the next claim retries).
func (s *Scheduler) stillClaimed(ctx context.Context, j sessions.Job, log *zap.Logger) bool {
	cur, err := s.opts.Store.Job(ctx, j.ID)
	switch {
	case errors.Is(err, sessions.ErrNoJob):
		log.Info("job removed before it fired")
		return false
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("job not read before its delivery; retried when its claim runs out", zap.Error(err))
			s.observe("failed", 0)
		}
		return false
	case cur.State != sessions.JobActive || cur.ClaimOwner != s.opts.Owner || !cur.NextAt.Equal(j.NextAt):
		log.Info("job changed before it fired; not delivered", zap.String("state", cur.State), zap.String("claim_owner", cur.ClaimOwner))
		return false
	}
	return true
}

// settle writes the outcomes of a batch under this scheduler's claims,
// in one call (one write on the files backend). A job removed meanwhile
// or a claim that ran out is logged; the delivery, if any, stands (its id
// makes a repeat a duplicate). If the settle fails, the claims run out
// and the occurrences are delivered again, and dropped as duplicates.
func (s *Scheduler) settle(ctx context.Context, done []outcome) {
	if len(done) == 0 {
		return
	}
	ss := make([]sessions.JobSettled, len(done))
	for i, o := range done {
		ss[i] = o.st
	}
	errs, err := s.opts.Store.SettleJobs(context.WithoutCancel(ctx), s.opts.Owner, ss)
	if err != nil {
		s.log.Warn("jobs not settled; their claims run out and the occurrences are tried again", zap.Int("jobs", len(done)), zap.Error(err))
		return
	}
	for i, o := range done {
		switch e := errs[i]; {
		case errors.Is(e, sessions.ErrNoJob):
			o.log.Info("job removed while it fired")
		case e != nil:
			o.log.Warn("job not settled; its claim runs out and the occurrence is tried again", zap.Error(e))
		case o.what == "missed" && o.st.State == sessions.JobMissed && s.opts.Missed != nil:
			s.opts.Missed(context.WithoutCancel(ctx), o.job, o.due) // settled under our claim: told once
		}
		s.observe(o.what, o.late)
	}
}

func (s *Scheduler) observe(outcome string, late time.Duration) {
	if s.opts.Observe != nil {
		s.opts.Observe(outcome, late)
	}
}

// nextAfter is the occurrence of s that follows due (the occurrence
// handled) and is after now (zero: none). It walks on from due, not from
// now: on the day a DST change repeats a wall-clock hour, now may lie in
// the repeat, and Next from there would give the repeat of the wall time
// due just had (a daily 02:30 fired late at 02:05 CET would fire again
// at 02:30 CET).
func nextAfter(s sessions.JobSchedule, due, now time.Time) time.Time {
	next, err := Next(s, due)
	if err == nil && !next.IsZero() && !next.After(now) { // Latest stopped short (maxCatchUp)
		next, err = Next(s, now)
	}
	if err != nil {
		return time.Time{}
	}
	return next
}
