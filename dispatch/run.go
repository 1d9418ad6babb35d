package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// typingEvery is how often the typing indicator is refreshed during a turn.
const typingEvery = 4 * time.Second

// runBatch is the lanes.RunFunc: commands run one by one, consecutive
// messages become one turn.
func (d *Dispatcher) runBatch(ctx context.Context, b lanes.Batch) {
	var pending []*work
	flush := func() {
		if len(pending) > 0 {
			d.turn(ctx, pending, b)
			pending, b.Dropped = nil, nil
		}
	}
	for _, it := range b.Items {
		w, ok := it.Payload.(*work)
		if !ok {
			continue
		}
		if w.Command != "" {
			flush()
			d.command(ctx, w, b)
			continue
		}
		pending = append(pending, w)
	}
	flush()
}

// inputText is what the model sees for one message: in groups the sender's
// name comes first so the agent can tell speakers apart.
func inputText(in channels.Inbound) string {
	if in.ChatType != channels.Direct && in.SenderName != "" {
		return "[" + in.SenderName + "] " + in.Text
	}
	return in.Text
}

func originFor(in channels.Inbound, k string) sessions.Origin {
	to := in.ChatID
	return sessions.Origin{
		Channel: in.Channel, ChatType: string(in.ChatType), AccountID: in.AccountID, To: to,
		ThreadID: in.ThreadID, From: in.SenderID, Name: in.SenderName, Title: in.Text,
		At: in.Time,
	}
}

// turn runs one agent turn for the messages ws (all of one session).
func (d *Dispatcher) turn(ctx context.Context, ws []*work, b lanes.Batch) {
	live := ws[:0:0]
	for _, w := range ws {
		if w.RecordID == "" {
			live = append(live, w)
			continue
		}
		n, err := d.journal.Attempt(w.RecordID)
		if err != nil {
			d.log.Error("journal attempt failed", zap.String("record_id", w.RecordID), zap.Error(err))
		}
		if n > d.opts.MaxAttempts {
			d.log.Error("message given up after repeated failures", zap.String("record_id", w.RecordID),
				zap.Int("attempts", n))
			d.finish(w.RecordID)
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	first, last := live[0], live[len(live)-1]
	log := d.log.With(zap.String("session_key", first.Key.String()), zap.String("agent_id", first.AgentID))
	store, err := d.opts.Sessions.Store(first.AgentID)
	if err != nil {
		log.Error("session store unavailable", zap.Error(err))
		d.failTurn(ctx, live, last)
		return
	}
	origin := originFor(last.In, first.Key.String())
	if last.Agent != nil {
		origin = sessions.Origin{At: d.opts.Now()}
	}
	if origin.At.IsZero() {
		origin.At = d.opts.Now()
	}
	_, info, err := store.Begin(ctx, first.Key, origin)
	if err != nil {
		log.Error("session begin failed", zap.Error(err))
		d.failTurn(ctx, live, last)
		return
	}
	if info.ResetReason != "" {
		d.opts.Metrics.Resets.WithLabelValues(info.ResetReason).Inc()
		log.Info("session rolled over", zap.String("reason", info.ResetReason), zap.String("previous_session_id", info.Previous))
	}
	var inputs []sessions.Message
	if len(b.Dropped) > 0 {
		inputs = append(inputs, sessions.UserText("[queue overflow: "+fmt.Sprint(len(b.Dropped))+
			" earlier messages were dropped]\n"+strings.Join(b.Dropped, "\n"), d.opts.Now()))
	}
	for _, w := range live {
		switch {
		case w.Consumed:
		case w.Agent != nil:
			inputs = append(inputs, w.Agent.Message)
		default:
			at := w.In.Time
			if at.IsZero() {
				at = d.opts.Now()
			}
			inputs = append(inputs, sessions.UserText(inputText(w.In), at))
		}
	}
	deliver := last.Agent == nil || last.Agent.Deliver
	out, adapter := d.replyTarget(store, last)
	if !deliver {
		adapter = nil
	}
	stopTyping := d.startTyping(ctx, adapter, out)
	start := time.Now()
	res, err := d.opts.Runner.Run(ctx, agents.Turn{
		AgentID: first.AgentID,
		Key:     first.Key,
		Inputs:  inputs,
		OnInputsAppended: func() {
			for _, w := range live {
				if w.RecordID != "" && !w.Consumed {
					w.Consumed = true
					if err := d.journal.Consumed(w.RecordID); err != nil {
						log.Error("journal consumed failed", zap.String("record_id", w.RecordID), zap.Error(err))
					}
				}
			}
		},
		Steer:   d.steerFunc(b),
		OnDelta: d.deltaFunc(ctx, adapter, out),
	})
	stopTyping()
	d.opts.Metrics.RunLatency.WithLabelValues(first.AgentID).Observe(time.Since(start).Seconds())
	if err != nil {
		if ctx.Err() != nil && d.closing.Load() {
			// Shutdown: the records stay pending and run again at next start.
			log.Info("turn interrupted by shutdown; will resume at next start")
			return
		}
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			log.Info("turn cancelled")
			d.finishAll(live)
			return
		}
		log.Error("turn failed", zap.Error(err))
		out.Text = userSafe(err)
		out.Failed = true
		d.send(ctx, adapter, out)
		d.finishAll(live)
		return
	}
	out.SessionID, out.TokenEstimate = res.SessionID, res.TokenEstimate
	out.Text = res.Text
	if adapter != nil && (strings.TrimSpace(out.Text) != "" || isStreamer(adapter)) {
		d.send(ctx, adapter, out)
	}
	d.finishAll(live)
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

func (d *Dispatcher) finishAll(ws []*work) {
	for _, w := range ws {
		d.finish(w.RecordID)
	}
}

func (d *Dispatcher) failTurn(ctx context.Context, ws []*work, last *work) {
	// Leave records pending: they are retried at next start up to MaxAttempts.
	if last.Agent == nil {
		d.notify(ctx, last.In, "Sorry, this message could not be processed right now.")
	}
}

// replyTarget picks where a turn's reply goes: the inbound message's chat,
// or for internal work the session's last known chat.
func (d *Dispatcher) replyTarget(store *sessions.Store, w *work) (channels.Outbound, channels.Adapter) {
	if w.Agent == nil {
		out := outboundFor(w.In)
		return out, d.adapter(out.Channel, out.AccountID)
	}
	e, ok, err := store.Get(w.Key)
	if err != nil || !ok || e.LastChannel == "" {
		return channels.Outbound{}, nil
	}
	out := channels.Outbound{Channel: e.LastChannel, AccountID: e.LastAccountID, ChatID: e.LastTo, ThreadID: e.LastThreadID}
	if w.Key.ThreadKind == "topic" {
		out.IsTopic = true
	}
	return out, d.adapter(out.Channel, out.AccountID)
}

func (d *Dispatcher) send(ctx context.Context, a channels.Adapter, out channels.Outbound) {
	if a == nil {
		return
	}
	// One attempt: adapters retry what is safe to retry themselves (429,
	// transient errors per chunk); resending a whole multi-chunk reply here
	// would duplicate the chunks already delivered.
	if err := a.Send(ctx, out); err != nil {
		d.opts.Metrics.SendErrors.WithLabelValues(out.Channel).Inc()
		if ctx.Err() == nil {
			d.log.Error("reply not delivered", zap.String("channel", out.Channel), zap.String("chat_id", out.ChatID), zap.Error(err))
		}
		return
	}
	d.opts.Metrics.Outbound.WithLabelValues(out.Channel).Inc()
}

func (d *Dispatcher) startTyping(ctx context.Context, a channels.Adapter, out channels.Outbound) func() {
	t, ok := a.(channels.Typer)
	if a == nil || !ok {
		return func() {}
	}
	tctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(typingEvery)
		defer tick.Stop()
		for {
			if err := t.Typing(tctx, out); err != nil && tctx.Err() == nil {
				d.log.Debug("typing indicator failed", zap.Error(err))
			}
			select {
			case <-tctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func (d *Dispatcher) deltaFunc(ctx context.Context, a channels.Adapter, out channels.Outbound) func(string) {
	s, ok := a.(channels.Streamer)
	if a == nil || !ok {
		return nil
	}
	return func(text string) { s.Delta(ctx, out, text) }
}

func (d *Dispatcher) steerFunc(b lanes.Batch) func() []sessions.Message {
	if b.Steer == nil {
		return nil
	}
	return func() []sessions.Message {
		var msgs []sessions.Message
		for _, it := range b.Steer() {
			w, ok := it.Payload.(*work)
			if !ok || w.Command != "" {
				continue
			}
			msgs = append(msgs, sessions.UserText(inputText(w.In), d.opts.Now()))
			if w.RecordID != "" {
				// Steered messages are appended by the runner with the next call.
				_ = d.journal.Consumed(w.RecordID)
				d.finish(w.RecordID)
			}
		}
		return msgs
	}
}
