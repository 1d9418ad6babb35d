// Package dispatch is the gateway's switchboard (SPEC §1): it takes the
// normalised messages channel adapters hand it, applies the access policy,
// resolves the agent and session key, journals each accepted message before
// the adapter acknowledges it, queues it on the session's lane and, when the
// lane runs it, executes chat commands or an agent turn and delivers the
// reply through the adapter it came from. Between the journal and the lane
// a sender's quick messages may be held and joined into one input
// (burst.go); rooms decide the ack reaction, error notices and reply
// threading (ack.go, errpolicy.go, channels.Room). Rooms with streaming on
// show the turn's progress or its partial answer in a draft message while
// it runs (stream.go); the reply itself always goes through the outbox.
// Each turn's tokens and cost go to the usage ledger once it ends
// (usage.go). A privileged command (/new, /reset, /switch, /delete) in a
// group from a sender the policy does not privilege is refused, unless the
// verdict says to ask the platform (commands.platformAdmins) and the room's
// adapter, a channels.AdminChecker, reports the sender an administrator of
// the room within 5 s.
//
// # Types
//
// The Dispatcher accepts messages (Handle), queues work on a lanes.Queue
// keyed by routing.Key (the key travels typed; it is rendered only where
// it is stored or logged) and runs each lane batch (run.go). Its phases
// and concerns have types of their own:
//
//   - work (work.go) is a lane item's payload: the session, then an
//     inbound message or command (chatMessage), internal work from the
//     agent runtime (agentWork) or a stored reply to resend, with what is
//     known of its record (recordState) and its place in a burst
//     (burstLinks).
//   - turn (turn.go) is one agent turn, run in SPEC §3.7's steps: begin
//     (recover what the transcript holds, start the records, begin the
//     session), inputs (turn_inputs.go), run (turn_run.go: the agent with
//     the ack reaction, typing, the draft stream and steering around it)
//     and settle (turn_settle.go: the outcome for every message answered).
//   - outbox (outbox.go) stores and sends replies; recovery (resume.go,
//     orphans.go, unsure.go) picks up work left by a previous run, another
//     replica or an unsure journal write; failures (failures.go,
//     errpolicy.go) settles work that reached no outcome: replayed work
//     recovered, failed turns retried or given up, storage outages waited
//     out, failure notices under the room's errorPolicy.
//   - commander runs chat commands (commands.go, archive.go,
//     usage_command.go); mediaFetcher turns attachments into model input
//     (media.go, media_store.go); roomHistory keeps unaddressed room
//     messages for the next turn (roomhistory.go); turnLeases runs batches
//     under their session's lease across replicas (turnlease.go,
//     turnbatch.go); acker sets the ack reaction (ack.go); messageTool
//     gives a turn its message tool room (message_room.go). These hold no
//     state: each is the Dispatcher seen for one concern.
//
// # Goroutines
//
// Who starts and waits for each: the lanes' runs belong to the
// lanes.Queue (drained within Shutdown's grace period); the outbox owns the
// resends that cannot wait on a lane (a full or cancelled queue, a dropped
// item, a reply with no session) and recovery owns orphan adoption and one
// resolver per unsure write; later owns the delayed retries' timers (a
// failed turn's backoff, parked work, a lost lease's requeue, a batch
// waiting for room in its lane). Shutdown stops the timers not fired (their
// records stay pending) and waits for those running, stops recovery's at
// once, drains the lanes, then cuts the outbox's resends short (their
// replies stay in the outbox for the next start) and returns once all have
// ended. A turn's typing loop, ack reaction, draft stream and lease watch
// end with the turn.
//
// What is given up (a message after MaxFailures or MaxDeaths, a reply the
// platform kept refusing) is kept as a dead letter in the backend
// (deadletters.go) for the operator to resubmit — once, however often it
// is asked — or discard; Status reports the lanes, the last message in and
// out per account and the give-ups for `gateway status` (status.go).
//
// A Dispatcher is safe for concurrent use. Its hot-reloadable settings live
// in an atomic pointer (SetRuntime); the lanes serialise all work of one
// session, so no dispatcher lock is held across I/O.
package dispatch
