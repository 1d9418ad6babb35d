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
// answer in the chat after the person said stop. The session's run is
// cancelled under the gate that orders the children's queueing with it
// (spawns.go): a child its run was spawning, or a result being announced
// into it, is stopped as well.
func (c commander) stop(ctx context.Context, w *work) {
	var dropped []lanes.Item
	children := c.stopChildren(ctx, w.Key, func() { dropped = c.cancelKey(w.Key) })
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
