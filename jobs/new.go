package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
)

// DefaultMaxPerRoom bounds the active jobs of one room (jobs.maxPerRoom).
const DefaultMaxPerRoom = 50

// ErrTooMany is wrapped by Add's error when the room has its maximum of
// active jobs.
var ErrTooMany = errors.New("too many active jobs in this room")

// Spec is what a user, the agent or the operator asks for.
type Spec struct {
	AgentID    string
	SessionKey string
	Target     sessions.JobTarget
	Text       string
	Schedule   sessions.JobSchedule
}

// NewJob returns the active job spec describes, with a new id and its
// first occurrence after now, or an error naming what is wrong (a
// schedule that does not parse or never fires, a time in the past, an
// empty or too long text).
func NewJob(spec Spec, now time.Time) (sessions.Job, error) {
	if err := CheckSchedule(spec.Schedule); err != nil {
		return sessions.Job{}, err
	}
	text := strings.TrimSpace(spec.Text)
	switch {
	case text == "":
		return sessions.Job{}, errors.New("the job has no text")
	case len(text) > sessions.MaxJobText:
		return sessions.Job{}, fmt.Errorf("the job's text is %d bytes, more than %d", len(text), sessions.MaxJobText)
	}
	next, err := Next(spec.Schedule, now)
	if err != nil {
		return sessions.Job{}, err
	}
	if next.IsZero() {
		return sessions.Job{}, fmt.Errorf("%s is in the past", spec.Schedule.At.UTC().Format(time.RFC3339))
	}
	if !spec.Schedule.At.IsZero() {
		spec.Schedule.At = spec.Schedule.At.UTC()
	}
	j := sessions.Job{ID: NewID(), AgentID: spec.AgentID, SessionKey: spec.SessionKey, Target: spec.Target,
		Text: text, Schedule: spec.Schedule, State: sessions.JobActive, NextAt: next, CreatedAt: now.UTC()}
	if err := sessions.CheckJob(j); err != nil {
		return sessions.Job{}, err
	}
	return j, nil
}

// NewID returns a new job id: "j" and 8 hex digits, short enough to type
// in /remind cancel.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "j" + hex.EncodeToString(b[:])
}

// Limit is the bound a MaxPerRoom setting gives now: 0 (the default)
// when the setting is nil.
func Limit(maxPerRoom func() int) int {
	if maxPerRoom == nil {
		return 0
	}
	return maxPerRoom()
}

// Add stores j unless its room has max active jobs already (0:
// DefaultMaxPerRoom; ErrTooMany). Two adds racing may both pass the
// count: the cap bounds abuse, it is not an invariant.
func Add(ctx context.Context, store sessions.Jobs, j sessions.Job, max int) error {
	if max <= 0 {
		max = DefaultMaxPerRoom
	}
	active, err := store.ListJobs(ctx, sessions.JobFilter{ChatKey: j.Target.ChatKey(), Active: true})
	if err != nil {
		return fmt.Errorf("jobs: add: %w", err)
	}
	if len(active) >= max {
		return fmt.Errorf("jobs: add: %w (%d; cancel one first)", ErrTooMany, max)
	}
	if err := store.AddJob(ctx, j); err != nil {
		return fmt.Errorf("jobs: add: %w", err)
	}
	return nil
}

// Describe is one line about j for lists: id, when next, schedule, state
// and text (cut to 60 characters), times in loc.
func Describe(j sessions.Job, loc *time.Location) string {
	when := j.NextAt.In(loc).Format("2006-01-02 15:04 MST")
	sched := "once"
	if j.Schedule.Recurring() {
		sched = j.Schedule.Cron
		if j.Schedule.TZ != "" {
			sched += " " + j.Schedule.TZ
		}
	}
	text := j.Text
	if r := []rune(text); len(r) > 60 {
		text = string(r[:59]) + "…"
	}
	line := fmt.Sprintf("%s  %s  (%s)  %s", j.ID, when, sched, text)
	if j.State != sessions.JobActive {
		line += "  [" + j.State + "]"
	}
	return line
}
