// Package lanes serialises work per session key and caps concurrency
// (SPEC §4). It imports no other package of this project.
//
// A Queue runs at most one batch at a time per key (the "session:<key>"
// lane) and at most a capped number of batches at once per Class (main 4,
// subagent 8 by default). Items that arrive while a key is busy wait in that
// key's queue and reach the RunFunc according to the key's Mode:
//
//   - collect (default): after the active run ends and a quiet window of
//     Debounce since the last arrival, all queued items of one Group run as
//     one batch; other Groups run as separate batches, in arrival order.
//   - followup: one batch per item, in arrival order.
//   - steer: the active run takes the items of its Group through
//     Batch.Steer; leftovers run afterwards like collect without the quiet
//     window (one batch per Group).
//   - interrupt: the active run's context is cancelled and the newest item
//     runs next; the older queued items are dropped into Batch.Dropped.
//     An item marked Item.NoInterrupt (a chat command) interrupts nothing
//     and is superseded by nothing: it runs in order, as in followup. A
//     run whose items are all Item.NoCancel is not cancelled: the newest
//     item runs after it.
//   - steer-backlog: as steer, but the items handed to the active run stay
//     queued, marked Item.Steered, and run afterwards like steer's leftovers
//     (one batch per Group, no quiet window): the run sees them at once and
//     they get a turn of their own too.
//   - queue (FIFO): one batch per item, in arrival order, as followup; the
//     owner merges nothing for it either (the dispatcher's bursts).
//
// An item reaching an idle key runs at once in every mode: the quiet window
// applies only to items that queued behind a run (or a Do). Settings are
// read through Options.Settings on every Enqueue and when a run or a Do
// ends, so reloads and per-session overrides apply to the next item and to
// the items already queued behind the run. Cap bounds the queued items per key;
// Drop picks what happens past it (summarize, old, new → ErrFull). Items
// dropped with a summary (summarize, interrupt) are handed to the next
// batch in Batch.Dropped for its run to settle, never lost on the way:
// Cancel and Shutdown return those no batch took yet.
//
// A Queue is generic over its key type K, any comparable type (the
// dispatcher uses routing.Key): the key given to Enqueue is handed back as
// it was in Batch.Key, Options.Settings and Options.OnDrop, so the owner
// never parses a string back. Logs show it with zap.Any (a Stringer by its
// String).
//
// Concurrency: all state is guarded by one mutex, never held while calling
// Options callbacks or the RunFunc. Idle keys hold no goroutine and no
// state: a key's entry exists only while it has queued items, an active
// run, a Do call or a pending quiet-window timer. A key waiting for a class
// slot holds no goroutine either (it sits in a FIFO per class); each batch
// runs on a goroutine started for it. Every run goroutine and timer is
// counted and waited for by Shutdown, which cancels the runs' contexts when
// its grace period ends; a RunFunc must then return promptly.
package lanes
