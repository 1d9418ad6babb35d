package dispatch

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// failures settles work that did not reach an outcome: what the
// transcript already holds of replayed messages (recover), turns that
// failed (counted, retried after a backoff, given up with a notice), work
// parked while storage is down, and the room's errorPolicy for failure
// notices (errpolicy.go), whose streaks it owns. The retries' timers are
// not waited for: they queue nothing once the dispatcher is closing.
type failures struct {
	d       *Dispatcher
	streaks streaks // rooms in a failure streak (errpolicy.go)
	// waits is the work waiting to run again, for /stop (retries.go).
	waits retries
}

// Waits before a failed turn runs again (failures beyond it give up), and
// before work parked on a storage failure is tried again.
var (
	failureBackoff = []time.Duration{time.Second, 4 * time.Second, 15 * time.Second}
	storageRetry   = 2 * time.Second
)

// isStorage reports whether err is the local storage failing (disk full,
// I/O error): the work waits for it instead of counting as a failure.
func isStorage(err error) bool { return sessions.IsStorage(err) }

// failed handles a turn that could not run to an outcome. A storage failure
// parks the work until the journal writes again; another failure is
// counted and the work runs again after a backoff, until MaxFailures.
func (f *failures) failed(ctx context.Context, ws []*work, log *zap.Logger, err error) {
	d := f.d
	ids := recordIDs(ws)
	if leaseLost(ctx, err) {
		d.leases.lostTurn(ws, log)
		return
	}
	if isStorage(err) {
		d.opts.Metrics.StorageErrors.Inc()
		log.Error("turn failed on storage; will run again when it recovers", zap.Error(err))
		_ = d.journal.Abort(ids...)
		f.park(ws)
		return
	}
	log.Error("turn failed", zap.Error(err))
	_ = d.journal.Fail(ids...)
	var retry []*work
	for _, w := range ws {
		if w.RecordID == "" {
			continue
		}
		w.Failures++
		if w.Failures >= d.opts.MaxFailures {
			f.giveUp(ctx, w, fmt.Sprintf("it failed %d times", w.Failures))
			continue
		}
		retry = append(retry, w)
	}
	if len(retry) == 0 {
		return
	}
	wait := failureBackoff[min(retry[0].Failures, len(failureBackoff))-1]
	x := f.waits.add(retry)
	d.later.after(wait, func() {
		if f.waits.take(x) {
			f.requeue(retry)
		}
	})
}

// park queues ws again once the journal takes writes (checked every
// storageRetry). Parked work is not a failure: it waits for the disk.
func (f *failures) park(ws []*work) {
	d := f.d
	x := f.waits.add(ws)
	var check func()
	check = func() {
		if d.closing.Load() || !f.waits.waiting(x) {
			return
		}
		if d.journal.Health() != nil {
			d.later.after(storageRetry, check)
			return
		}
		if f.waits.take(x) {
			f.requeue(ws)
		}
	}
	d.later.after(storageRetry, check)
}

func (f *failures) requeue(ws []*work) {
	d := f.d
	if d.closing.Load() || len(ws) == 0 {
		return // pending in the journal: the next start runs them
	}
	for _, w := range ws {
		w.Replayed = true // the transcript may hold part of it
	}
	// One item again: parts joined in one transcript entry stay together.
	d.enqueue(context.Background(), bundle(ws))
}

// giveUp finishes w after repeated failures or process deaths, with a short
// notice in its chat (never silently), a metric and a log line.
func (f *failures) giveUp(ctx context.Context, w *work, why string) {
	d := f.d
	d.gaveUp(GiveUpFailures)
	d.log.Error("message given up", zap.String("record_id", w.RecordID), zap.Stringer("session_key", w.Key),
		zap.String("reason", why))
	d.buryWork(ctx, w, why)
	if w.Agent != nil {
		d.finish(w.RecordID)
		return
	}
	at := w.In.Time
	if at.IsZero() {
		at = w.AcceptedAt
	}
	out := outboundFor(w.In)
	out.Failed = true
	out.Answers = answers([]*work{w})
	out.Text = fmt.Sprintf("Sorry — I could not answer your message from %s: %q.", at.Local().Format("15:04"), firstLine(w.In.Text, 40))
	if f.withholdGiveUp(ctx, w, out.Text) {
		return
	}
	d.outbox.deliver(ctx, w.Key, w.AgentID, []string{w.RecordID}, out, "")
}

// release ends the wait of web requests among ws that get no reply of
// their own (stopped, dropped): their clients see a clear final event.
func (f *failures) release(ctx context.Context, ws []*work, text string) {
	d := f.d
	for _, w := range ws {
		if w.Agent != nil || w.In.Channel == "" {
			continue
		}
		if _, ok := d.adapter(w.In.Channel, w.In.AccountID).(channels.Streamer); ok {
			d.notify(ctx, w.In, text)
		}
	}
}
