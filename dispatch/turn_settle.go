package dispatch

import (
	"context"
	"errors"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/lanes"
)

// The settle step of a turn: its outcome recorded for every message it
// answered, its own and those steered into it.

// settle records the run's outcome (res, err): the reply goes through the
// outbox; a failure is told, counted or left for the next start.
func (t *turn) settle(ctx context.Context, res agents.Result, err error) {
	d, first := t.d, t.first
	all := slices.Concat(t.ws, t.steered.all())
	d.charge(all, first.AgentID, res.Usage)
	ids := recordIDs(all)
	t.out.Answers = answers(all)
	if t.sendAhead(ctx) {
		return // stored with the answer (turn_ahead.go)
	}
	if err != nil && t.ambient && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		t.ambientSettle(ids, err, false) // nobody asked: nobody is told
		return
	}
	if err != nil {
		// A notice names the session the run was in (the web chat's
		// final event: a new chat follows the session its message went
		// into; none would say the chat has no session any more).
		t.out.SessionID = res.SessionID
		t.settleFailed(ctx, all, ids, err)
		return
	}
	if ctx.Err() != nil && leaseLost(ctx, nil) {
		// The lease went while the answer came: another replica may run
		// the session now; the reply is in the transcript for whoever
		// recovers these records.
		d.leases.lostTurn(all, t.log)
		return
	}
	d.fails.streaks.end(first.Key)
	if t.ambient {
		t.ambientSettle(ids, nil, spoke(t.msgRoom)) // the final text is never sent
		return
	}
	t.out.SessionID, t.out.TokenEstimate = res.SessionID, res.TokenEstimate
	t.out.Text = res.Text
	t.out.Media = outMedia(res.Media)
	if t.adapter == nil {
		d.finish(ids...)
		return
	}
	if strings.TrimSpace(t.out.Text) == "" && len(t.out.Media) == 0 && !isStreamer(t.adapter) {
		d.finish(ids...)
		return
	}
	if !d.outbox.deliver(ctx, first.Key, first.AgentID, ids, t.out, res.EntryID) {
		d.leases.lostTurn(all, t.log)
	}
}

// settleFailed settles a run that ended in err over all (record ids
// ids): cancelled; a model error the person is told about (that notice is
// the turn's outcome); or a failure counted against the records.
func (t *turn) settleFailed(ctx context.Context, all []*work, ids []string, err error) {
	d := t.d
	var ue interface{ UserMessage() string }
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		t.cancelled(ctx, all, ids)
	case errors.As(err, &ue) && !isStorage(err):
		t.log.Error("turn failed", zap.Error(err))
		t.out.Text, t.out.Failed = ue.UserMessage(), true
		if !t.deliver {
			d.finish(ids...)
			return
		}
		if d.fails.withholdNotice(ctx, t.last, all, ids, t.out.Text) {
			return
		}
		d.outbox.deliver(ctx, t.first.Key, t.first.AgentID, ids, t.out, "")
	default:
		d.fails.failed(ctx, all, t.log, err)
	}
}

// cancelled ends a turn over ws (record ids ids) whose context was
// cancelled before its outcome: by the shutdown, the records stay pending
// for the next start; by /stop or interrupt mode (also when the run ended
// only once a shutdown had begun), they are finished and waiting web
// clients told.
func (t *turn) cancelled(ctx context.Context, ws []*work, ids []string) {
	d := t.d
	if leaseLost(ctx, nil) {
		d.leases.lostTurn(ws, t.log)
		return
	}
	if ctx.Err() != nil && d.closing.Load() && !stoppedForGood(ctx) {
		t.log.Info("turn interrupted by shutdown; will resume at next start")
		_ = d.journal.Abort(ids...)
		return
	}
	t.log.Info("turn cancelled")
	d.finish(ids...)
	d.fails.release(ctx, ws, "Stopped before an answer was ready.")
}

// stoppedForGood reports whether ctx, a turn's, was cancelled by /stop or
// interrupt mode (its lane's Cancel), whatever happened after: a run
// stopped that ended only once a shutdown had begun was taken for one the
// shutdown interrupted, and the message the person had stopped was
// answered after the next start.
func stoppedForGood(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), lanes.ErrCancelled)
}
