package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Dead letters (issue 25): what the dispatcher gives up — a message after
// MaxFailures failed turns or MaxDeaths process deaths, a reply it could
// not deliver — is kept in the backend's sessions.DeadLetters (at most
// Options.DeadLetterKeep) for the operator to resubmit or discard. The
// notice in the chat and the metric stay as they were.
//
// Resubmitting runs once however often it is asked: the letter is claimed
// (failed → resubmitting, one storage write only one caller wins), the
// work is written to the journal under sessions.ResubmitID(letter) (a
// record the journal dedupes, or a reply stored before it is sent), the
// letter is removed, and only then is the work queued or sent. A process
// that dies between the claim and the removal leaves the letter
// resubmitting; the next start finishes it (settleClaimed) before it
// reads the journal, so the work runs or is sent by the journal's own
// resume, once.

// deadLetterID is the letter id of a given-up record or reply: the same
// at every repeat of the give-up (a crash before the record finished gives
// it up again at the next start; Bury keeps the first).
func deadLetterID(kind, id string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(kind+":"+id)).String()
}

// buryRecord keeps a given-up journal record as a dead letter.
func (d *Dispatcher) buryRecord(ctx context.Context, rec sessions.Record, why string) {
	d.bury(ctx, sessions.DeadLetter{ID: deadLetterID(sessions.DeadMessage, rec.ID), Kind: sessions.DeadMessage,
		Reason: why, At: d.opts.Now(), AgentID: rec.AgentID, SessionKey: rec.SessionKey, Record: &rec})
}

// buryWork keeps given-up work as a dead letter: its record as journaled.
func (d *Dispatcher) buryWork(ctx context.Context, w *work, why string) {
	if w.RecordID == "" {
		return
	}
	env := envelope{Agent: w.Agent, History: w.HistoryMark}
	if w.Agent == nil {
		in := w.In
		env.Inbound = &in
	}
	payload, err := json.Marshal(env)
	if err != nil {
		d.log.Error("given-up message not kept: not encodable", zap.String("record_id", w.RecordID), zap.Error(err))
		return
	}
	d.buryRecord(ctx, sessions.Record{ID: w.RecordID, AgentID: w.AgentID, SessionKey: w.Key.String(), Payload: payload,
		Failures: w.Failures, AcceptedAt: w.AcceptedAt}, why)
}

// buryReply keeps a reply given up after sent of its chunks were
// delivered. roomRefuses says the room will not take the bot's messages
// (the platform refused the send, not for a rate limit; the account is
// gone): the scheduled jobs the reply answers are then disabled
// (jobGivenUp).
func (d *Dispatcher) buryReply(ctx context.Context, rp sessions.Reply, sent int, why string, roomRefuses bool) {
	rp.Sent = sent
	dl := sessions.DeadLetter{ID: deadLetterID(sessions.DeadReply, rp.ID), Kind: sessions.DeadReply,
		Reason: why, At: d.opts.Now(), AgentID: rp.AgentID, SessionKey: rp.SessionKey, Reply: &rp}
	d.bury(ctx, dl)
	if roomRefuses {
		d.jobGivenUp(ctx, dl)
	}
}

// refusedRoom reports whether send error err is the platform's answer
// that the room does not take the bot's messages: a refusal
// (refusedSend) that is not of the bot's credentials. A timeout, a server
// error, a flood wait or a revoked token says nothing about the room.
func refusedRoom(err error) bool {
	return refusedSend(err) && !channels.AccountRefused(err)
}

// refusedSend reports whether send error err is a final refusal: the
// platform answered (channels.Answered), and not with a rate limit. It is
// not asked again.
func refusedSend(err error) bool {
	return channels.Answered(err) && channels.RetryAfter(err) == 0
}

func (d *Dispatcher) bury(ctx context.Context, dl sessions.DeadLetter) {
	dropped, err := d.opts.Sessions.DeadLetters().Bury(context.WithoutCancel(ctx), dl, d.opts.DeadLetterKeep)
	if err != nil {
		d.log.Error("given-up "+dl.Kind+" not kept as a dead letter", zap.String("dead_letter_id", dl.ID), zap.Error(err))
		return
	}
	d.log.Info("given-up "+dl.Kind+" kept as a dead letter", zap.String("dead_letter_id", dl.ID),
		zap.String("session_key", dl.SessionKey), zap.String("reason", dl.Reason))
	if dropped > 0 {
		d.log.Warn("dead letters over their bound: the oldest dropped", zap.Int("dropped", dropped),
			zap.Int("keep", d.opts.DeadLetterKeep))
	}
}

// DeadLetters lists the messages and replies given up, newest first.
func (d *Dispatcher) DeadLetters(ctx context.Context) ([]sessions.DeadLetter, error) {
	return d.opts.Sessions.DeadLetters().DeadLetters(ctx)
}

// Discard deletes dead letter id (one being resubmitted is refused with
// sessions.ErrDeadLetterClaimed).
func (d *Dispatcher) Discard(ctx context.Context, id string) error {
	if err := d.opts.Sessions.DeadLetters().RemoveDeadLetter(ctx, id, sessions.DeadFailed); err != nil {
		return fmt.Errorf("dispatch: discard: %w", err)
	}
	d.log.Info("dead letter discarded", zap.String("dead_letter_id", id))
	return nil
}

// Resubmit runs dead letter id again: a message gets a new turn, a reply
// is sent from its first undelivered chunk. Of concurrent calls one wins;
// the others get sessions.ErrDeadLetterClaimed, later ones
// sessions.ErrNoDeadLetter.
func (d *Dispatcher) Resubmit(ctx context.Context, id string) (sessions.DeadLetter, error) {
	if d.closing.Load() {
		return sessions.DeadLetter{}, fmt.Errorf("dispatch: resubmit: shutting down: %w", lanes.ErrClosed)
	}
	dead := d.opts.Sessions.DeadLetters()
	dl, err := dead.ClaimDeadLetter(ctx, id)
	if err != nil {
		return dl, fmt.Errorf("dispatch: resubmit: %w", err)
	}
	ctx = context.WithoutCancel(ctx) // past the claim, finish what it started
	queue, err := d.writeResubmit(ctx, dl)
	if err != nil {
		// The letter stays resubmitting: the next start finishes it.
		return dl, fmt.Errorf("dispatch: resubmit %s: %w", id, err)
	}
	if err := dead.RemoveDeadLetter(ctx, id, sessions.DeadResubmitting); err != nil && !errors.Is(err, sessions.ErrNoDeadLetter) {
		d.log.Error("resubmitted dead letter not removed", zap.String("dead_letter_id", id), zap.Error(err))
	}
	d.log.Info("dead letter resubmitted", zap.String("dead_letter_id", id), zap.String("kind", dl.Kind),
		zap.String("session_key", dl.SessionKey))
	queue()
	return dl, nil
}

// writeResubmit writes dl's work into the journal under its resubmit id
// and returns what queues it (nothing when the journal already had it).
func (d *Dispatcher) writeResubmit(ctx context.Context, dl sessions.DeadLetter) (queue func(), err error) {
	switch dl.Kind {
	case sessions.DeadMessage:
		rec := resubmitRecord(dl, d.opts.Now)
		dup, err := d.journal.Accept(ctx, rec)
		if err != nil {
			return nil, err
		}
		if dup {
			return func() {}, nil
		}
		w, err := d.recovery.workFromRecord(rec)
		if err != nil {
			d.finish(rec.ID)
			return nil, fmt.Errorf("record unreadable: %w", err)
		}
		return func() { d.enqueue(ctx, w) }, nil
	case sessions.DeadReply:
		rp := resubmitReply(dl, d.opts.Now)
		if err := d.journal.Ready(rp); err != nil {
			return nil, err
		}
		return func() { d.resendReply(ctx, rp) }, nil
	}
	return nil, fmt.Errorf("unknown kind %q", dl.Kind)
}

// resendReply sends a stored reply on its session's lane (or on its own
// goroutine when it has no session).
func (d *Dispatcher) resendReply(ctx context.Context, rp sessions.Reply) {
	key, err := routing.Parse(rp.SessionKey)
	if err != nil {
		d.outbox.goResend(ctx, rp)
		return
	}
	d.enqueue(ctx, &work{Key: key, AgentID: rp.AgentID, Reply: &rp})
}

// resubmitRecord is the journal record that runs message letter dl again.
func resubmitRecord(dl sessions.DeadLetter, now func() time.Time) sessions.Record {
	r := *dl.Record
	return sessions.Record{ID: sessions.ResubmitID(dl.ID), AgentID: r.AgentID, SessionKey: r.SessionKey,
		Payload: r.Payload, AcceptedAt: now()}
}

// resubmitReply is the outbox reply that sends reply letter dl again
// from its first undelivered chunk; its records finished when it was
// given up.
func resubmitReply(dl sessions.DeadLetter, now func() time.Time) sessions.Reply {
	rp := *dl.Reply
	rp.ID, rp.Records, rp.Draft, rp.CreatedAt = sessions.ResubmitID(dl.ID), nil, "", now()
	return rp
}

// settleClaimed finishes the resubmits a process left half done (letters
// resubmitting): the work is written to the journal unless it is there
// already, and the letter removed. Resume calls it before it reads the
// journal: work written before the process died is pending there and
// resumed with the rest (replies are in the outbox); a record accepted
// here is queued here. Either way it runs, or is sent, once.
func (r *recovery) settleClaimed(ctx context.Context) {
	d := r.d
	dead := d.opts.Sessions.DeadLetters()
	ls, err := dead.DeadLetters(ctx)
	if err != nil {
		d.log.Error("dead letters unreadable at start", zap.Error(err))
		return
	}
	var stored map[string]bool // reply ids in the outbox, read once
	for _, dl := range ls {
		if dl.State != sessions.DeadResubmitting {
			continue
		}
		var queue func()
		switch dl.Kind {
		case sessions.DeadMessage:
			// A record accepted before the process died is a duplicate
			// here, and pending: the journal's resume runs it. One
			// accepted now is this process's: it is queued below.
			rec := resubmitRecord(dl, d.opts.Now)
			var dup bool
			if dup, err = d.journal.Accept(ctx, rec); err == nil && !dup {
				w, werr := r.workFromRecord(rec)
				if werr != nil {
					d.finish(rec.ID)
					err = fmt.Errorf("record unreadable: %w", werr)
				} else {
					queue = func() { d.enqueue(ctx, w) }
				}
			}
		case sessions.DeadReply:
			if stored == nil {
				stored = map[string]bool{}
				rps, rerr := d.journal.Replies()
				if rerr != nil {
					d.log.Error("outbox unreadable: resubmitted replies left for the next start", zap.Error(rerr))
					return
				}
				for _, rp := range rps {
					stored[rp.ID] = true
				}
			}
			if !stored[sessions.ResubmitID(dl.ID)] {
				err = d.journal.Ready(resubmitReply(dl, d.opts.Now))
			}
		}
		if err != nil {
			d.log.Error("half-done resubmit not finished", zap.String("dead_letter_id", dl.ID), zap.Error(err))
			continue
		}
		if err := dead.RemoveDeadLetter(ctx, dl.ID, sessions.DeadResubmitting); err != nil && !errors.Is(err, sessions.ErrNoDeadLetter) {
			d.log.Error("resubmitted dead letter not removed", zap.String("dead_letter_id", dl.ID), zap.Error(err))
		}
		d.log.Info("half-done resubmit finished", zap.String("dead_letter_id", dl.ID), zap.String("kind", dl.Kind))
		if queue != nil {
			queue()
		}
	}
}
