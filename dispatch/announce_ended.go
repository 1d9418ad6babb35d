package dispatch

import (
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// announcePrefix begins the record id of a subagent's announcement into
// its parent session (agents.Runner.announce dispatches it as
// "announce:<child key>"; Dispatch journals agent work as "agent:<id>").
const announcePrefix = "agent:announce:"

// dropEndedAnnouncements finishes, without a turn, the subagent
// announcements among t.ws whose child was spawned by a session of the
// parent key that has since been ended by hand (/new, /reset, /delete,
// /switch, the HTTP API, `gateway sessions reset|delete` with the daemon
// running or not): the result belongs to that conversation, and would
// otherwise arrive into the next session unasked — or start the session a
// /delete promised to the next message. Stopping the children at the end
// (stopChildren) does not cover a child that finished just before, whose
// announcement waits on the parent's lane or in the journal, nor an end
// the daemon never saw. A session ended by a daily or idle rollover, or
// pruned, still gets its children's results, as before. It reports
// whether work is left for the turn.
func (t *turn) dropEndedAnnouncements() bool {
	keep := t.ws[:0:0]
	for _, w := range t.ws {
		if !announcement(w) || !t.spawnerEnded(w) {
			keep = append(keep, w)
			continue
		}
		t.log.Info("subagent result dropped: the session that started it was ended",
			zap.String("record_id", w.RecordID))
		t.d.finish(w.RecordID)
	}
	t.ws = keep
	return len(keep) > 0
}

// spawnerEnded reports whether the session of w.Key that spawned the
// child announcing in w was ended by hand. Anything unknown (the child's
// spawn time, a store that cannot be read) delivers the result.
func (t *turn) spawnerEnded(w *work) bool {
	d := t.d
	child, err := routing.Parse(strings.TrimPrefix(w.RecordID, announcePrefix))
	if err != nil || !child.IsSubagent() {
		return false
	}
	spawned := d.spawnedAt(child)
	if spawned.IsZero() {
		return false
	}
	cur, ok, err := t.store.Get(w.Key)
	if err != nil || (ok && !cur.SessionStartedAt.After(spawned)) {
		return false // the spawning session is current
	}
	arch, err := t.store.Archived(w.Key)
	if err != nil {
		return false
	}
	for _, a := range arch { // newest first
		if !a.SessionStartedAt.After(spawned) && a.ArchivedAt.After(spawned) {
			return endedByHand(a.Reason)
		}
	}
	return false // switched back to since: current again
}

// spawnedAt is when the subagent session child was created (its spawn),
// also once it was archived (cleanup: delete); zero when unknown.
func (d *Dispatcher) spawnedAt(child routing.Key) time.Time {
	st, err := d.opts.Sessions.Store(child.Agent)
	if err != nil {
		return time.Time{}
	}
	if e, ok, err := st.Get(child); err == nil && ok {
		return e.CreatedAt
	}
	if arch, err := st.Archived(child); err == nil && len(arch) > 0 {
		return arch[len(arch)-1].SessionStartedAt
	}
	return time.Time{}
}

// endedByHand reports whether an archived session's reason is someone's
// wish (a reset trigger, the API, the CLI, a delete, a switch), not a
// rollover of the reset policy, maintenance or a repair.
func endedByHand(reason string) bool {
	switch reason {
	case sessions.ReasonDaily, sessions.ReasonIdle, "pruned", "recovered":
		return false
	}
	return true
}
