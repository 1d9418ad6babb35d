package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Scheduled jobs (issue 24): a reminder or a recurring task that, when
// due, arrives in one session as an inbound turn (package jobs schedules
// them, package dispatch delivers them). The store keeps each job with
// its next due time and a claim: a scheduler claims the due jobs it will
// fire for a lease (ClaimDueJobs, one write that only one claimer wins in
// any process or replica), fires them, and settles each (SettleJob: the
// next due time, or the end) under its claim. A scheduler that dies
// between claim and settle leaves the claim to run out; the next claimer
// fires the same occurrence again, and the delivery's id (derived from
// the job and the occurrence) makes that repeat a duplicate the journal
// drops. So each occurrence fires once across restarts and replicas.

// Job states.
const (
	JobActive   = "active"   // waiting for its next due time
	JobDone     = "done"     // a one-shot job that fired
	JobMissed   = "missed"   // a one-shot job due while the gateway was down, past the grace window
	JobDisabled = "disabled" // its room refused delivery for good (the bot left): not fired again
)

// Job is one scheduled job.
type Job struct {
	// ID is the job's id ("j" and hex, JobID), shown to users.
	ID string `json:"id"`
	// AgentID and SessionKey are the session the job is delivered into.
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
	// Target is the room the session belongs to and who set the job.
	Target JobTarget `json:"target"`
	// Text is what arrives in the session when the job fires.
	Text string `json:"text"`
	// Schedule is when it fires.
	Schedule JobSchedule `json:"schedule"`
	State    string      `json:"state"`
	// NextAt is the occurrence due next (an active job), or the last one
	// due (a job that ended).
	NextAt time.Time `json:"nextAt"`
	// LastFiredAt is the occurrence fired last (zero: none); Fires counts them.
	LastFiredAt time.Time `json:"lastFiredAt,omitzero"`
	Fires       int       `json:"fires,omitempty"`
	// Note says why the job ended or what went wrong last (missed
	// occurrences, a refused delivery).
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// ClaimOwner holds the job's due occurrence until ClaimUntil (a
	// scheduler firing it).
	ClaimOwner string    `json:"claimOwner,omitempty"`
	ClaimUntil time.Time `json:"claimUntil,omitzero"`
}

// JobTarget is the room a job's session belongs to, as the channel
// adapter named it when the job was set (package sessions does not import
// channels: dispatch converts), and who set it.
type JobTarget struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId"`
	ChatID    string `json:"chatId"`
	ChatType  string `json:"chatType,omitempty"`
	ThreadID  string `json:"threadId,omitempty"`
	IsTopic   bool   `json:"isTopic,omitempty"`
	GuildID   string `json:"guildId,omitempty"`
	// CaseSensitive marks peer ids the channel declared case-sensitive.
	CaseSensitive bool `json:"caseSensitive,omitempty"`
	// SenderID and SenderName set the job ("" for the operator); the
	// delivered turn is theirs (their budget pays for it).
	SenderID   string `json:"senderId,omitempty"`
	SenderName string `json:"senderName,omitempty"`
}

// ChatKey names the room, threads aside ("channel/account/chat"), as
// channels.Address.ChatKey spells it.
func (t JobTarget) ChatKey() string { return t.Channel + "/" + t.AccountID + "/" + t.ChatID }

// JobSchedule is when a job fires: once At, or by Cron (standard five
// fields or a descriptor such as @daily) in time zone TZ (an IANA name;
// "" is UTC). Exactly one of At and Cron is set.
type JobSchedule struct {
	At   time.Time `json:"at,omitzero"`
	Cron string    `json:"cron,omitempty"`
	TZ   string    `json:"tz,omitempty"`
}

// Recurring reports a cron schedule.
func (s JobSchedule) Recurring() bool { return s.Cron != "" }

// JobFilter selects jobs to list; empty fields select all.
type JobFilter struct {
	AgentID    string
	SessionKey string
	// ChatKey selects the jobs of one room (JobTarget.ChatKey).
	ChatKey string
	// Active keeps only active jobs.
	Active bool
}

// Match reports whether j passes f.
func (f JobFilter) Match(j Job) bool {
	return (f.AgentID == "" || j.AgentID == f.AgentID) &&
		(f.SessionKey == "" || j.SessionKey == f.SessionKey) &&
		(f.ChatKey == "" || j.Target.ChatKey() == f.ChatKey) &&
		(!f.Active || j.State == JobActive)
}

// JobSettle is what a scheduler writes when it has handled a claimed
// job's due occurrence.
type JobSettle struct {
	// Fired is the occurrence delivered (zero: none was, e.g. missed).
	Fired time.Time
	// State is the job's state from now on; NextAt its next occurrence
	// (for an active job) or the last one due.
	State  string
	NextAt time.Time
	// Note replaces the job's note ("" clears it).
	Note string
}

// JobSettled is one job's settle in SettleJobs.
type JobSettled struct {
	ID string
	JobSettle
}

// Jobs stores scheduled jobs. Implementations are safe for concurrent
// use by goroutines and processes (filestore.Jobs, pgstore's).
type Jobs interface {
	// AddJob stores j (CheckJob must accept it); an id already stored is
	// ErrJobExists.
	AddJob(ctx context.Context, j Job) error
	// Job returns job id, or ErrNoJob.
	Job(ctx context.Context, id string) (Job, error)
	// ListJobs returns the jobs f selects, due first (NextAt, then id).
	ListJobs(ctx context.Context, f JobFilter) ([]Job, error)
	// RemoveJob deletes job id, or returns ErrNoJob. A claimed job may be
	// removed: its settle then finds no job.
	RemoveJob(ctx context.Context, id string) error
	// ClaimDueJobs claims for owner, until now+lease, at most limit
	// active jobs due at now (NextAt <= now) that no other claim holds
	// (none, or one that ran out), earliest first, and returns them. It
	// also returns when the next job not claimed now falls due (zero:
	// none), so the caller knows how long it may sleep.
	ClaimDueJobs(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) (claimed []Job, next time.Time, err error)
	// SettleJob applies s to job id if owner still holds its claim, and
	// releases the claim. A job gone is ErrNoJob; one whose claim owner
	// lost (it ran out and another took it) is ErrJobClaimLost.
	SettleJob(ctx context.Context, id, owner string, s JobSettle) error
	// SettleJobs is SettleJob for several jobs of owner at once (one
	// write on the files backend, where each write rewrites the file);
	// errs[i] is ss[i]'s outcome, err a failure of the whole.
	SettleJobs(ctx context.Context, owner string, ss []JobSettled) (errs []error, err error)
	// DisableJob ends job id in state disabled with note, whoever holds
	// it (a delivered occurrence's reply was given up: the room refuses
	// the bot). A job already ended keeps its state; no job is ErrNoJob.
	DisableJob(ctx context.Context, id, note string) error
	// MoveJobs re-targets the jobs of room fromChatKey (JobTarget.ChatKey)
	// to chat toChatID of the same channel and account: the room moved to
	// a new id (a Telegram group upgraded to a supergroup). A job
	// delivered into session fromKey is delivered into toKey from now on
	// (the session moved with its chat; fromKey "" moves no key). It
	// returns how many jobs it changed; called again, it changes none
	// (MovedJob). Claims, states and due times are kept.
	MoveJobs(ctx context.Context, fromChatKey, toChatID, fromKey, toKey string) (int, error)
}

// Errors of Jobs.
var (
	ErrNoJob        = errors.New("no such job")
	ErrJobExists    = errors.New("job exists")
	ErrJobClaimLost = errors.New("job claim lost")
)

// Bounds of a job.
const (
	MaxJobText = 4000 // bytes of Job.Text
	maxJobID   = 64
	maxJobKey  = 512
)

// CheckJob reports what is wrong with j for AddJob: a missing id, agent,
// session key, room or text; a text too long; a schedule with neither or
// both of At and Cron; a state that is not a job state; a field that is
// not UTF-8 or holds a NUL.
func CheckJob(j Job) error {
	switch {
	case j.ID == "" || len(j.ID) > maxJobID:
		return fmt.Errorf("job id %q: empty or longer than %d bytes", j.ID, maxJobID)
	case j.AgentID == "":
		return fmt.Errorf("job %s: no agent", j.ID)
	case j.SessionKey == "" || len(j.SessionKey) > maxJobKey:
		return fmt.Errorf("job %s: session key empty or longer than %d bytes", j.ID, maxJobKey)
	case j.Target.Channel == "" || j.Target.ChatID == "":
		return fmt.Errorf("job %s: no room (channel and chat)", j.ID)
	case strings.TrimSpace(j.Text) == "":
		return fmt.Errorf("job %s: empty text", j.ID)
	case len(j.Text) > MaxJobText:
		return fmt.Errorf("job %s: text of %d bytes is longer than %d", j.ID, len(j.Text), MaxJobText)
	case j.Schedule.At.IsZero() == (j.Schedule.Cron == ""):
		return fmt.Errorf("job %s: the schedule needs exactly one of a time and a cron expression", j.ID)
	case j.NextAt.IsZero():
		return fmt.Errorf("job %s: no due time", j.ID)
	}
	switch j.State {
	case JobActive, JobDone, JobMissed, JobDisabled:
	default:
		return fmt.Errorf("job %s: unknown state %q", j.ID, j.State)
	}
	t := j.Target
	for _, f := range []struct{ name, v string }{
		{"id", j.ID}, {"agent", j.AgentID}, {"session key", j.SessionKey}, {"text", j.Text},
		{"cron", j.Schedule.Cron}, {"time zone", j.Schedule.TZ}, {"note", j.Note},
		{"channel", t.Channel}, {"account", t.AccountID}, {"chat", t.ChatID}, {"chat type", t.ChatType},
		{"thread", t.ThreadID}, {"guild", t.GuildID}, {"sender", t.SenderID}, {"sender name", t.SenderName},
	} {
		if !utf8.ValidString(f.v) || strings.IndexByte(f.v, 0) >= 0 {
			return fmt.Errorf("job %s: %s is not UTF-8 without NUL bytes", j.ID, f.name)
		}
	}
	return nil
}

// ClaimableJob reports whether j may be claimed at now: active, due, and
// not held by a claim that still runs. Backends share the rule.
func ClaimableJob(j Job, now time.Time) bool {
	return j.State == JobActive && !j.NextAt.After(now) && (j.ClaimOwner == "" || !j.ClaimUntil.After(now))
}

// SettledJob returns j after s: the claim released, the state, due time
// and note replaced, a fired occurrence counted.
func SettledJob(j Job, s JobSettle) Job {
	if !s.Fired.IsZero() {
		j.LastFiredAt, j.Fires = s.Fired, j.Fires+1
	}
	j.State, j.NextAt, j.Note = s.State, s.NextAt, s.Note
	j.ClaimOwner, j.ClaimUntil = "", time.Time{}
	return j
}

// MovedJob returns j re-targeted as MoveJobs says, and whether that
// changed it. Backends share the rule.
func MovedJob(j Job, fromChatKey, toChatID, fromKey, toKey string) (Job, bool) {
	if j.Target.ChatKey() != fromChatKey || toChatID == "" || j.Target.ChatID == toChatID {
		return j, false
	}
	j.Target.ChatID = toChatID
	if fromKey != "" && toKey != "" && j.SessionKey == fromKey {
		j.SessionKey = toKey
	}
	return j, true
}

// SortJobs orders jobs due first (ties by id), as ListJobs returns them.
func SortJobs(js []Job) {
	slices.SortFunc(js, func(a, b Job) int {
		return cmp.Or(a.NextAt.Compare(b.NextAt), cmp.Compare(a.ID, b.ID))
	})
}
