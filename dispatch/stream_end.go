package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
)

// stop ends the stream's updates: a call in flight completes (so no stale
// edit can land after the final one), waits are cut short. Safe on nil.
func (s *draftStream) stop() {
	if s == nil {
		return
	}
	s.halt()
	<-s.done
}

// handOver prepares out, the turn's reply, after stop: in partial mode the
// reply's first chunk replaces the draft (out.Draft), after the chat's
// edit spacing (at most editEvery: a longer retry_after is waited out by
// the adapter's send, which retries a 429 like any chunk). Safe on nil.
func (s *draftStream) handOver(ctx context.Context, out channels.Outbound) channels.Outbound {
	if s == nil || s.mode != channels.StreamPartial || s.msgID == "" || s.dropped {
		return out
	}
	out.Draft = s.msgID
	wctx, cancel := context.WithTimeout(ctx, editEvery)
	defer cancel()
	_ = s.d.gate.wait(wctx, out.ChatKey())
	return out
}

// finish removes the draft unless a stored reply took it over (its ready
// line retired the record): the status line of progress mode after the
// answer was sent, a partial draft of a turn that ended without a reply.
// Safe on nil.
func (s *draftStream) finish() {
	if s == nil {
		return
	}
	s.stop()
	if s.msgID == "" {
		return
	}
	o := s.out
	o.Draft = s.msgID
	id := draftRecord(o)
	if !s.d.journal.DraftLive(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.life), draftCallLimit)
	defer cancel()
	_ = s.d.clearDraft(ctx, s.dr, o, statusDone, s.log)
	if err := s.d.journal.DraftDone(id); err != nil {
		s.log.Warn("draft record not retired", zap.Error(err))
	}
}

// clearDraft deletes draft out.Draft, or edits it to fallback when it
// cannot be deleted; the edit's error if neither worked.
func (d *Dispatcher) clearDraft(ctx context.Context, dr channels.Drafter, out channels.Outbound, fallback string, log *zap.Logger) error {
	err := dr.DeleteDraft(ctx, out, out.Draft)
	if err == nil {
		d.opts.Metrics.DraftCalls.WithLabelValues(out.Channel, "delete").Inc()
		return nil
	}
	if ra := channels.RetryAfter(err); ra > 0 && ra <= draftCallLimit {
		t := time.NewTimer(ra)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if err = dr.DeleteDraft(ctx, out, out.Draft); err == nil {
			return nil
		}
	}
	if eerr := dr.EditDraft(ctx, out, out.Draft, fallback); eerr != nil {
		log.Warn("draft could not be deleted or edited", zap.String("draft", out.Draft), zap.Error(err), zap.NamedError("edit_error", eerr))
		return eerr
	}
	d.opts.Metrics.DraftCalls.WithLabelValues(out.Channel, "edit").Inc()
	return nil
}

// transient reports a failure worth another try at a later start: the
// platform was not reached (as opposed to an answer refusing the call).
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || channels.RetryAfter(err) > 0
}

// clearLeftDrafts clears the drafts a previous process left (it died while
// their turns ran): each is deleted, or edited to say the answer follows;
// the turn itself runs again or its stored reply is sent. A draft that
// could not be cleared (platform unreachable) is kept for the next start
// until it is draftKeep old. It returns within draftCallLimit in all (it
// runs before the daemon is ready; there are at most as many drafts as
// turns that ran at once).
func (d *Dispatcher) clearLeftDrafts(ctx context.Context) {
	drafts, err := d.journal.Drafts()
	if err != nil || len(drafts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, draftCallLimit)
	defer cancel()
	cleared := 0
	for _, dr := range drafts {
		var out channels.Outbound
		ok := json.Unmarshal(dr.Target, &out) == nil && out.Draft != ""
		var a channels.Adapter
		if ok {
			a = d.adapter(out.Channel, out.AccountID)
		}
		drafter, can := a.(channels.Drafter)
		keep := false
		if ok && a != nil && can {
			err := d.clearDraft(ctx, drafter, out, statusFollows, d.log.With(zap.String("channel", out.Channel), zap.String("chat_id", out.ChatID)))
			keep = err != nil && transient(err) && d.opts.Now().Sub(dr.CreatedAt) < draftKeep
			if err == nil {
				cleared++
			}
		}
		if keep {
			continue
		}
		if err := d.journal.DraftDone(dr.ID); err != nil {
			d.log.Warn("draft record not retired", zap.String("draft_id", dr.ID), zap.Error(err))
		}
	}
	d.log.Info("cleared drafts left by the previous run", zap.Int("drafts", len(drafts)), zap.Int("cleared", cleared))
}

// stepFunc is agents.Turn.OnStep for the stream (nil without one).
func (s *draftStream) stepFunc() func(agents.Step) {
	if s == nil {
		return nil
	}
	return s.onStep
}

// joinDelta feeds the deltas of a turn to the adapter's Streamer (f) and
// to the draft stream.
func joinDelta(f func(string), s *draftStream) func(string) {
	if s == nil || s.mode != channels.StreamPartial {
		return f
	}
	if f == nil {
		return s.onDelta
	}
	return func(t string) { f(t); s.onDelta(t) }
}
