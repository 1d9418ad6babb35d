package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/sessions"
)

// Scheduled jobs (issue 24): the scheduler claims due jobs from the
// backend and delivers each occurrence through the dispatcher
// (Dispatcher.DeliverJob) as a message of the job's session. The daemon
// owns the scheduler's one goroutine: serve starts it once journaled work
// has resumed and stops it (cancel, then wait for Run to return) before
// the adapters stop, so no occurrence is delivered into a dispatcher
// that is shutting down. A job whose delivered occurrence's reply the
// platform refuses (the bot was kicked or blocked) is disabled
// (dispatch.Options.JobGivenUp).

// jobOptions are the dispatcher's /remind settings over the config in
// force (read at each use, so a reload applies).
func (d *Daemon) jobOptions(cfg *configs.Config) dispatch.JobOptions {
	return dispatch.JobOptions{
		Zone:       func(agentID string) *time.Location { return d.config().Jobs.Zone(agentID) },
		MaxPerRoom: d.maxJobsPerRoom,
		Added:      d.wakeJobs,
		Off:        !cfg.Jobs.Enabled,
	}
}

// maxJobsPerRoom is jobs.maxPerRoom in force (a reload applies at the
// next add).
func (d *Daemon) maxJobsPerRoom() int { return d.config().Jobs.MaxPerRoom }

// reloadJobs applies a reloaded config's scheduler timings; jobs.enabled
// and jobs.lease need a restart (restartOnly).
func (d *Daemon) reloadJobs(cfg *configs.Config) {
	if s := d.sched.Load(); s != nil {
		s.SetGrace(cfg.Jobs.Grace)
		s.SetPoll(cfg.Jobs.Poll)
		s.Wake() // a shorter poll takes effect now, not after the old sleep
	}
}

// wakeJobs makes the scheduler look for due jobs now (one was added).
func (d *Daemon) wakeJobs() {
	if s := d.sched.Load(); s != nil {
		s.Wake()
	}
}

// jobGivenUp disables a job whose occurrence the dispatcher gave up.
func (d *Daemon) jobGivenUp(ctx context.Context, jobID, why string) {
	note := "disabled: its delivery was given up: " + why
	err := d.backend.Jobs().DisableJob(ctx, jobID, note)
	switch {
	case errors.Is(err, sessions.ErrNoJob):
	case err != nil:
		d.log.Error("job not disabled", zap.String("job_id", jobID), zap.Error(err))
	default:
		d.log.Warn("job disabled: its room refuses delivery", zap.String("job_id", jobID), zap.String("reason", why))
	}
}

// deliverJob is the scheduler's Deliver: the dispatcher's, its refusals
// translated into the scheduler's terms.
func (d *Daemon) deliverJob(ctx context.Context, j sessions.Job, at time.Time, id string) error {
	err := d.disp.DeliverJob(ctx, j, at, id)
	switch {
	case errors.Is(err, dispatch.ErrJobNoRoom):
		return fmt.Errorf("%w: %w", jobs.ErrRoomGone, err)
	case errors.Is(err, dispatch.ErrJobThrottled), errors.Is(err, dispatch.ErrJobRevoked):
		return fmt.Errorf("%w: %w", jobs.ErrRefused, err)
	}
	return err
}

// jobsMetrics are the scheduler's collectors.
type jobsMetrics struct {
	outcomes *prometheus.CounterVec
	late     prometheus.Histogram
}

func newJobsMetrics(reg prometheus.Registerer) jobsMetrics {
	m := jobsMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_jobs_total",
			Help: "Scheduled job occurrences by outcome: fired, missed (past the grace window), disabled (room refuses), refused (limits), failed (retried)."},
			[]string{"outcome"}),
		late: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gateway_jobs_fire_delay_seconds",
			Help:    "How late a scheduled job occurrence was delivered after it was due.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 30, 120, 600}}),
	}
	reg.MustRegister(m.outcomes, m.late)
	for _, o := range []string{"fired", "missed", "disabled", "refused", "failed"} {
		m.outcomes.WithLabelValues(o)
	}
	return m
}

// runJobs starts the scheduler (unless jobs.enabled is false); stop
// cancels it and waits for its goroutine.
func (d *Daemon) runJobs(ctx context.Context, cfg *configs.Config) (stop func()) {
	if !cfg.Jobs.Enabled {
		return func() {}
	}
	host, _ := os.Hostname()
	m := newJobsMetrics(d.reg)
	s, err := jobs.New(jobs.Options{
		Store: d.backend.Jobs(), Deliver: d.deliverJob, Missed: d.disp.NoteJobMissed,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8]),
		Poll:  cfg.Jobs.Poll, Grace: cfg.Jobs.Grace, Lease: cfg.Jobs.Lease, Now: d.opts.Now, Log: d.log.Named("jobs"),
		Observe: func(outcome string, late time.Duration) {
			m.outcomes.WithLabelValues(outcome).Inc()
			if outcome == "fired" {
				m.late.Observe(late.Seconds())
			}
		},
	})
	if err != nil {
		d.log.Error("scheduler not started", zap.Error(err))
		return func() {}
	}
	d.sched.Store(s)
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(jctx) // returns nil when jctx ends
	}()
	return func() {
		cancel()
		<-done
	}
}

// jobSettings is the API's job settings, nil (the routes answer 404) when
// jobs are off.
func jobSettings(cfg *configs.Config, s *api.JobSettings) *api.JobSettings {
	if !cfg.Jobs.Enabled {
		return nil
	}
	return s
}
