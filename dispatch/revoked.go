package dispatch

import (
	"context"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Messages whose sender a reload has revoked. Handle asks the access policy
// when a message comes; the message may then wait (behind a long turn in
// its lane, in a burst's window, in the journal across a restart) while the
// operator edits the config: removes its sender from an allowlist, switches
// its group off. A message the policy does not admit never reaches an
// agent (SPEC §6), so the policy in force is asked again (Runtime.Admits)
// right before the message does: when its turn or its chat command runs,
// and when a running turn would take it in steer mode (nothing is asked
// while the runtime that admitted it is still in force). A message no longer
// admitted is finished without a turn and without a reply (as it would have
// been refused had it come now) and logged. A turn already running is not
// cut: what it took, it answers.
//
// Only chat members' messages are asked again, job occurrences (their
// setter's messages, sent later: jobAdmitted, also asked by DeliverJob)
// and a subagent's result announced into a direct chat's session (its
// sender's task, reported later: announceAdmitted); not other internal
// work, nor resent replies.

// stillAdmitted reports whether the policy in force admits w (a lane item:
// a message, the burst it leads, a command) and, when it does not, why.
// A burst's parts share their sender and session: its lead answers for all.
func (d *Dispatcher) stillAdmitted(w *work) (ok bool, reason string) {
	rt := d.rt.Load()
	if rt.Admits != nil && announcement(w) {
		return d.announceAdmitted(rt, w)
	}
	if rt.Admits == nil || w.AdmittedBy == rt || w.Agent != nil || w.Reply != nil {
		return true, "" // no reload since Handle admitted it, or not a member's message
	}
	if _, job := jobOccurrence(w.RecordID); job {
		return jobAdmitted(rt, w.In)
	}
	return rt.Admits(w.In)
}

// admitted returns w, or what is left of it once the parts whose sender
// the policy in force no longer admits are finished without a turn (nil:
// nothing is left). A burst's parts share their sender, but a bundle (a
// failed turn's batch queued again, a batch split around a held record:
// bundle) may carry several senders' messages behind one lead: each part
// is asked for itself.
func (d *Dispatcher) admitted(w *work) *work {
	parts := expand(w)
	keep := parts[:0:0]
	for _, p := range parts {
		if ok, reason := d.stillAdmitted(p); !ok {
			d.dropRevoked(p, reason)
			continue
		}
		keep = append(keep, p)
	}
	switch {
	case len(keep) == len(parts):
		return w
	case len(keep) == 0:
		return nil
	}
	return bundle(keep)
}

// dropRevoked finishes part, one message, without a turn.
func (d *Dispatcher) dropRevoked(part *work, reason string) {
	channel := part.In.Channel
	if channel == "" {
		channel = part.Key.Channel // an announcement: internal work
	}
	d.opts.Metrics.Refused.WithLabelValues(channel).Inc()
	d.log.Warn("queued message dropped: the access policy in force no longer admits it",
		zap.String("channel", part.In.Channel), zap.String("account_id", part.In.AccountID),
		zap.String("chat_id", part.In.ChatID), zap.String("sender_id", part.In.SenderID),
		zap.Stringer("session_key", part.Key), zap.String("record_id", part.RecordID), zap.String("reason", reason))
	d.releaseHolds(part)
	d.finish(part.RecordID)
}

// stillPrivileged reports whether the sender of w, a privileged command
// (/new, /reset, /switch, /delete, /remind for others) that waited in its
// lane across a reload, may still run it: the operator may have removed
// them from commands.owners or the room's allowFrom meanwhile. Asked only
// when a reload happened since Handle (or for a command replayed after a
// restart); a command no longer allowed is answered as Handle would have
// answered it, and its record finishes with the answer.
func (c commander) stillPrivileged(ctx context.Context, w *work) bool {
	d := c.d
	rt := d.rt.Load()
	if rt.Access == nil || w.AdmittedBy == rt || w.Agent != nil || w.Reply != nil || !needsPrivilege(w) {
		return true
	}
	if _, job := jobOccurrence(w.RecordID); job {
		return true
	}
	verdict := rt.Access(w.In)
	if verdict.Privileged || c.platformAdmin(ctx, w.In, verdict) {
		return true
	}
	d.log.Warn("queued command refused: the access policy in force no longer privileges its sender",
		zap.String("channel", w.In.Channel), zap.String("account_id", w.In.AccountID),
		zap.String("chat_id", w.In.ChatID), zap.String("sender_id", w.In.SenderID),
		zap.Stringer("session_key", w.Key), zap.String("command", w.Command), zap.String("record_id", w.RecordID))
	c.reply(ctx, w, onlyAllowed(w.Command))
	return false
}

// AccessChanged tells the dispatcher that who the policy admits changed
// without a reload (an operator revoked a paired sender through the API):
// the runtime in force is replaced by a copy, so every message accepted
// before is asked again (stillAdmitted, stillPrivileged) before it reaches
// an agent, as after a reload.
func (d *Dispatcher) AccessChanged() {
	rt := *d.rt.Load()
	d.rt.Store(&rt)
}

// announceAdmitted reports whether the policy in force admits the chat a
// subagent's result announced in w would be answered into: in a direct
// chat's session, its last sender (the one the reply goes to), who asked
// for the task — a sender revoked while the child worked gets no turn
// and no reply from it, as they get none from a job they set. A group
// session is not asked (who spawned the child is not recorded), nor a
// session the store cannot read, nor one that never spoke with a chat.
func (d *Dispatcher) announceAdmitted(rt *Runtime, w *work) (bool, string) {
	st, err := d.opts.Sessions.Store(w.AgentID)
	if err != nil {
		return true, ""
	}
	e, ok, err := st.Get(w.Key)
	if err != nil || !ok || e.LastChannel == "" || e.LastFrom == "" || channels.ChatType(e.ChatType) != channels.Direct {
		return true, ""
	}
	return rt.Admits(channels.Inbound{ChatType: channels.Direct, SenderID: e.LastFrom,
		Address: channels.Address{Channel: e.LastChannel, AccountID: e.LastAccountID, ChatID: e.LastTo}})
}
