package dispatch

import (
	"context"

	"go.uber.org/zap"

	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions"
)

// Limits (issue 14): a message is checked after the access policy and
// before it is journaled, so a throttled one never reaches the agent and
// is no work for it; the turn's usage is charged when the turn returns.

// limitedCommand reports whether w counts against the limits: messages,
// and the commands that run the model (/compact, /new or /reset with a
// first message: words after the command or the files it captions). Other commands (/status, /help, /stop, /queue, ...)
// always work, so a throttled sender can still see why and stop a run.
func (d *Dispatcher) limitedCommand(w *work) bool {
	switch w.Command {
	case "":
		return true
	case "compact":
		return true
	case "new", "reset":
		if len(w.In.Attachments) > 0 { // its files are the new session's first message
			return true
		}
		first, tail := cutWord(w.Args)
		return w.Args != "" && !(w.Command == "new" && tail == "" && isModel(d.opts.Providers, first))
	}
	return false
}

// throttled checks w against the limits; a refused message is answered
// with the limiter's notice (when this sender was not told in this room
// within the notice window) and reported true.
func (d *Dispatcher) throttled(ctx context.Context, w *work) bool {
	lim := d.opts.Limits
	if lim == nil || !d.limitedCommand(w) {
		return false
	}
	in := w.In
	dec := lim.Check(ctx, limits.Subject{AgentID: w.AgentID, Channel: in.Channel, SenderID: in.LimitSender(), ChatID: in.ChatID})
	if dec.Allow {
		w.Hold, w.Rated = dec.Hold, dec
		return false
	}
	d.log.Info("message throttled", zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID),
		zap.String("sender_id", in.LimitSender()), zap.String("agent_id", w.AgentID),
		zap.String("scope", dec.Scope), zap.String("kind", dec.Kind), zap.Bool("notice", dec.Notice != ""))
	if dec.Notice != "" {
		d.notify(ctx, in, dec.Notice)
	}
	return true
}

// charge adds a turn's usage to the budgets of its senders, room and
// agent (internal work charges the agent only) and drops the holds its
// messages took at their checks (a turn that cost nothing only drops
// them).
func (d *Dispatcher) charge(ws []*work, agentID string, u sessions.Usage) {
	if d.opts.Limits == nil {
		return
	}
	c := limits.Usage{AgentID: agentID, Tokens: u.TotalTokens, CostUSD: u.Cost.Total}
	for _, w := range ws {
		if w.Hold != "" {
			c.Holds = append(c.Holds, w.Hold)
		}
		if w.Agent != nil {
			continue
		}
		c.Channel, c.ChatID = w.In.Channel, w.In.ChatID
		if s := w.In.LimitSender(); s != "" && !contains(c.Senders, s) {
			c.Senders = append(c.Senders, s)
		}
	}
	d.opts.Limits.Charge(c)
}

// releaseHolds drops the budget holds of work that ends without its
// turn's charge (a duplicate, a journal failure, a dropped or failed
// message). Dropping a hold twice is harmless.
func (d *Dispatcher) releaseHolds(ws ...*work) {
	if d.opts.Limits == nil {
		return
	}
	var ids []string
	for _, w := range ws {
		if w.Hold != "" {
			ids = append(ids, w.Hold)
		}
	}
	d.opts.Limits.Release(ids...)
}

// refundRate gives back the rate tokens of w's check: w was not accepted
// (a duplicate of a message accepted before, a journal that refused it),
// so it does not count against the sender's, room's or agent's rate.
func (d *Dispatcher) refundRate(w *work) {
	if d.opts.Limits != nil {
		d.opts.Limits.Refund(w.Rated)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
