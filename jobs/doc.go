// Package jobs schedules the gateway's jobs (issue 24): reminders and
// recurring tasks that arrive in a session when due. It parses what users
// write ("in 2 hours", "tomorrow 09:00", "cron 0 9 * * 1-5", "@daily",
// when.go), computes occurrences in the job's time zone (schedule.go,
// robfig/cron for cron expressions) and runs the Scheduler (scheduler.go),
// which claims due jobs from the store (sessions.Jobs), hands each
// occurrence to a Deliver function and settles it.
//
// # Once
//
// Each occurrence is delivered once across restarts and replicas: the
// store's claim gives a due job to one scheduler for a lease; Deliver is
// handed an id derived from the job and the occurrence (OccurrenceID),
// which the dispatcher's journal deduplicates, so a scheduler that died
// after delivering and before settling leaves a repeat that is dropped.
//
// # Missed and refused
//
// An occurrence found due more than Grace (default 10 min) late — the
// gateway was down — is not delivered: a one-shot job ends missed, a
// recurring one moves to its next occurrence, and both keep a note and
// are logged (job_missed). A delivery the room refuses for good
// (ErrRoomGone: the bot left, the account is gone) disables the job with a
// note instead of retrying it forever (the daemon does the same for a
// refusal found later, when the platform refuses the delivered turn's
// reply). A job cancelled after its claim is not delivered: the claimed
// job is read again just before its delivery.
// Other delivery errors leave the claim to run out: the next claim
// retries within the grace window.
//
// # Goroutines
//
// Run is the scheduler's only goroutine, owned by whoever calls it (the
// daemon's assembler, gatewayd, which cancels its context at shutdown and
// waits for Run to return); Deliver runs on it, one occurrence at a time.
// Wake may be called from any goroutine.
package jobs
