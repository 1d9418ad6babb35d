package dispatch

import "go.uber.org/zap"

// childGone finishes, without a turn, work for a subagent session that is
// no longer stored, and reports whether it did. Only sessions_spawn
// creates a child's session (before it queues the child's task): one gone
// was deleted once it had reported (cleanup: delete; the process died
// before its record was finished) or by an operator. Begun again, the
// task ran again in a fresh session no parent knew. A store that cannot
// be read runs the turn as before.
func (t *turn) childGone() bool {
	if !t.first.Key.IsSubagent() {
		return false
	}
	_, ok, err := t.store.Get(t.first.Key)
	if err != nil || ok {
		return false
	}
	ids := recordIDs(t.ws)
	t.log.Info("subagent work dropped: its session no longer exists", zap.Strings("record_ids", ids))
	t.d.releaseHolds(t.ws...)
	t.d.finish(ids...)
	return true
}
