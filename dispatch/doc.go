// Package dispatch is the gateway's switchboard (SPEC §1): it takes the
// normalised messages channel adapters hand it, applies the access policy,
// resolves the agent and session key, journals each accepted message before
// the adapter acknowledges it, queues it on the session's lane and, when the
// lane runs it, executes chat commands or an agent turn and delivers the
// reply through the adapter it came from. Between the journal and the lane
// a sender's quick messages may be held and joined into one input
// (burst.go); rooms decide the ack reaction, error notices and reply
// threading (ack.go, errpolicy.go, channels.Room). Attachments are fetched
// and turned into model input when their turn runs (media.go), and
// downloads of sessions that ended are pruned (media_store.go).
// Rooms with streaming on show the
// turn's progress or its partial answer in a draft message while it runs
// (stream.go); the reply itself always goes through the outbox. Each
// turn's tokens and cost go to the usage ledger once it ends (usage.go);
// /usage reports them in the chat (usage_command.go). A privileged command
// (/new, /reset, /switch, /delete) in a group from a sender the policy does
// not privilege is refused, unless the verdict says to ask the platform
// (commands.platformAdmins) and the room's adapter, a channels.AdminChecker,
// reports the sender an administrator of the room within 5 s.
//
// The outbox (outbox.go) stores and sends replies; recovery (resume.go,
// orphans.go, unsure.go) picks up work left by a previous run, another
// replica or an unsure journal write. Each has its own receiver.
//
// Goroutines and who waits for them: the lanes' runs belong to the
// lanes.Queue (drained within Shutdown's grace period); the outbox owns the
// resends that cannot wait on a lane (a full or cancelled queue, a dropped
// item, a reply with no session) and recovery owns orphan adoption and one
// resolver per unsure write. Shutdown stops recovery's at once, drains the
// lanes, then cuts the outbox's resends short (their replies stay in the
// outbox for the next start) and returns once all have ended. A turn's
// typing loop, ack reaction and lease watch end with the turn.
//
// A Dispatcher is safe for concurrent use. Its hot-reloadable settings live
// in an atomic pointer (SetRuntime); the lanes serialise all work of one
// session, so no dispatcher lock is held across I/O.
package dispatch
