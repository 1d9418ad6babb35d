package dispatch

import (
	"context"
	"errors"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/internal/stack"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// runBatch is the lanes.RunFunc. On a journal several processes share it
// runs the batch under its session's lease (turnlease.go).
func (d *Dispatcher) runBatch(ctx context.Context, b laneBatch) {
	stack.Reserve()      // the lane's new goroutine: a turn's depth in one step, not by doublings
	b = d.takeDropped(b) // the queue's dropped messages run with b (overflow.go)
	if t, ok := d.journal.(sessions.Turns); ok {
		d.leases.run(ctx, t, b)
		return
	}
	d.runItems(ctx, b)
}

// runItems runs a batch: commands run one by one, consecutive messages
// become one turn.
func (d *Dispatcher) runItems(ctx context.Context, b laneBatch) {
	var pending []*work
	flush := func() {
		if len(pending) > 0 {
			d.runTurn(ctx, pending, b)
			pending = nil
		}
	}
	var seen map[string]bool // record ids so far; only a batch of several can repeat one
	if len(b.Items) > 1 {
		seen = make(map[string]bool, len(b.Items))
	}
	for _, it := range b.Items {
		w, ok := it.Payload.(*work)
		if !ok {
			continue
		}
		if seen != nil && w.Reply == nil && d.queuedTwice(w, seen) {
			continue
		}
		if w = d.admitted(w); w == nil { // its senders lost access while it waited (revoked.go)
			continue
		}
		if w.Reply != nil {
			flush()
			d.outbox.resend(ctx, *w.Reply, &b.Key)
			continue
		}
		if w.Command != "" {
			flush()
			if d.cmds.stillPrivileged(ctx, w) { // its sender may have lost the right meanwhile (revoked.go)
				d.cmds.run(ctx, w, b)
			}
			continue
		}
		parts := expand(w)
		if slices.ContainsFunc(parts, announcement) && slices.ContainsFunc(pending, announcement) {
			// One subagent result a turn: each is cut to a share of the
			// parent's window (agents), and several taken together
			// outgrew it and failed, every result lost.
			flush()
		}
		if it.Steered {
			for _, p := range parts {
				p.Steered = true
			}
		}
		pending = append(pending, parts...)
	}
	flush()
}

// queuedTwice reports whether w's records all came earlier in this batch
// (seen holds the batch's record ids so far): a record queued twice in one
// process must reach the model and the transcript once. No path is known
// to do it (the failed-write resolver and a redelivery are kept apart in
// unsure.go); this keeps a slip there from becoming a repeated input. A
// joined burst that repeats only some of its parts is kept whole.
func (d *Dispatcher) queuedTwice(w *work, seen map[string]bool) bool {
	parts := expand(w)
	dup := 0
	for _, p := range parts {
		if p.RecordID != "" && seen[p.RecordID] {
			dup++
		}
	}
	if dup > 0 {
		d.log.Warn("a message was queued twice in one batch", zap.Stringer("session_key", w.Key),
			zap.String("record_id", w.RecordID), zap.Bool("dropped", dup == len(parts)))
	}
	if dup > 0 && dup == len(parts) {
		return true
	}
	for _, p := range parts {
		if p.RecordID != "" {
			seen[p.RecordID] = true
		}
	}
	return false
}

// originFor describes where in came from; a thread's or topic's session
// records its parent's key (parentSessionKey).
func originFor(in channels.Inbound, key routing.Key) sessions.Origin {
	o := sessions.Origin{
		Channel: in.Channel, ChatType: string(in.ChatType), AccountID: in.AccountID, To: in.ChatID,
		ThreadID: in.ThreadID, From: in.SenderID, Name: in.SenderName, Title: in.Text,
		At: in.Time,
	}
	if p := key.Parent(); p != key && !key.IsSubagent() {
		o.ParentKey = p.String()
	}
	return o
}

func isStreamer(a channels.Adapter) bool {
	_, ok := a.(channels.Streamer)
	return ok
}

// userSafe turns a runner error into text fit for a chat.
func userSafe(err error) string {
	var se interface{ UserMessage() string }
	if errors.As(err, &se) {
		return se.UserMessage()
	}
	return "Sorry, something went wrong while answering. Please try again."
}

// replyTarget picks where a turn's reply goes: the inbound message's chat,
// or for internal work the session's last known chat.
func (d *Dispatcher) replyTarget(store sessions.AgentStore, w *work) (channels.Outbound, channels.Adapter) {
	if w.Agent == nil {
		out := outboundFor(w.In)
		return out, d.adapter(out.Channel, out.AccountID)
	}
	e, ok, err := store.Get(w.Key)
	if err != nil || !ok || e.LastChannel == "" {
		return channels.Outbound{}, nil
	}
	out := channels.Outbound{Address: channels.Address{Channel: e.LastChannel, AccountID: e.LastAccountID, ChatID: e.LastTo, ThreadID: e.LastThreadID}}
	if w.Key.ThreadKind == "topic" {
		out.IsTopic = true
	}
	return out, d.adapter(out.Channel, out.AccountID)
}

// announcement reports whether w is a subagent's result announced into
// its parent session (agents.Runner.announce).
func announcement(w *work) bool {
	return w.Agent != nil && !w.Agent.Subagent && strings.HasPrefix(w.RecordID, announcePrefix)
}
