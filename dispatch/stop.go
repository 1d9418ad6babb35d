package dispatch

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
)

// stop cancels the session's active run and queued work (it does not wait
// for the lane: that is the point): what its lane holds, the burst being
// held, and failed turns' work waiting to run again.
// The subagents the session started are stopped too (their runs
// cancelled, their queued work dropped): a child left working would
// announce its result into this session afterwards, and the parent would
// answer in the chat after the person said stop.
func (c commander) stop(ctx context.Context, w *work) {
	dropped := c.cancelKey(w.Key)
	children := c.stopChildren(ctx, w.Key)
	c.dropStopped(ctx, dropped)
	text := fmt.Sprintf("Stopped. %d queued message(s) dropped.", len(dropped))
	if children > 0 {
		text += fmt.Sprintf(" %d subagent(s) stopped.", children)
	}
	c.reply(ctx, w, text)
}

// stopRepeated journals /stop's record and reports whether the journal
// already had it: the platform delivered it again (Discord's catch-up
// after a restart reads the history after a cursor written once a
// second; Telegram repeats a batch the dead process had not confirmed).
// Run again, it stopped the messages sent after it, which the restart had
// resumed. Its answer finishes the record (commander.reply). A journal
// that cannot take the record does not hold /stop up: it stops, unguarded.
func (d *Dispatcher) stopRepeated(ctx context.Context, w *work) bool {
	rec, err := w.inboundRecord()
	if err == nil {
		var dup bool
		if dup, err = d.accept(ctx, rec); err == nil {
			return dup
		}
	}
	d.log.Warn("stop not journaled; run without its duplicate check", zap.Stringer("session_key", w.Key),
		zap.String("record_id", w.RecordID), zap.Error(err))
	return false
}

// stopChildren stops the subagents key's session started (their runs
// cancelled, their queued work dropped) and returns how many were queued
// or running: /stop, and /new and /reset, whose new session has nothing
// to do with the task (its result would arrive into it unasked).
func (c commander) stopChildren(ctx context.Context, key routing.Key) int {
	n := 0
	for _, ch := range c.children(key) {
		// A child counts when it was queued or running (its run start is
		// recorded while it runs).
		if items := c.cancelKey(ch.key); len(items) > 0 || ch.running {
			n++
			c.dropStopped(ctx, items)
		}
	}
	return n
}

// cancelKey cancels key's active run and takes what its lane holds, the
// burst being held and failed turns' work waiting to run again.
func (c commander) cancelKey(key routing.Key) []lanes.Item {
	d := c.d
	dropped := d.queue.Cancel(key)
	for _, lead := range d.hold.drop(key) {
		dropped = append(dropped, lanes.Item{Payload: lead})
	}
	for _, ws := range d.fails.waits.drop(key) {
		dropped = append(dropped, lanes.Item{Payload: bundle(ws)})
	}
	return dropped
}

// children are the keys of the subagent sessions key started (a
// subagent starts none). A store that cannot be read is logged and
// skipped: the parent's own stop does not wait on it.
func (c commander) children(key routing.Key) []child {
	d := c.d
	if key.IsSubagent() {
		return nil
	}
	ids, err := d.opts.Sessions.Agents()
	if err != nil {
		d.log.Warn("stop: listing agents for subagents failed", zap.Stringer("session_key", key), zap.Error(err))
		return nil
	}
	parent := key.String()
	var out []child
	for _, id := range ids {
		st, err := d.opts.Sessions.Store(id)
		if err != nil {
			d.log.Warn("stop: opening an agent's sessions failed", zap.String("agent_id", id), zap.Error(err))
			continue
		}
		list, err := st.List()
		if err != nil {
			d.log.Warn("stop: listing an agent's sessions failed", zap.String("agent_id", id), zap.Error(err))
			continue
		}
		for _, e := range list {
			if e.SpawnedBy != parent {
				continue
			}
			if k, err := routing.Parse(e.SessionKey); err == nil && k.IsSubagent() {
				out = append(out, child{key: k.Canonical(), running: e.RunStartedAt > 0})
			}
		}
	}
	return out
}

// child is a subagent session /stop stops.
type child struct {
	key     routing.Key
	running bool
}

// dropStopped finishes work /stop took off its lanes, without a turn.
func (c commander) dropStopped(ctx context.Context, dropped []lanes.Item) {
	d := c.d
	for _, it := range dropped {
		x, ok := it.Payload.(*work)
		switch {
		case !ok:
		case x.Reply != nil:
			d.outbox.goResend(context.WithoutCancel(ctx), *x.Reply) // it answers messages already run
		default:
			d.releaseHolds(expand(x)...) // no turn: their budget holds go now
			d.finish(recordIDs(expand(x))...)
			d.fails.release(ctx, expand(x), "Stopped before an answer was ready.")
		}
	}
}
