package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// typingEvery is how often the typing indicator is refreshed during a turn.
const typingEvery = 4 * time.Second

// runBatch is the lanes.RunFunc. On a journal several processes share it
// runs the batch under its session's lease (turnlease.go).
func (d *Dispatcher) runBatch(ctx context.Context, b laneBatch) {
	if t, ok := d.journal.(sessions.Turns); ok {
		d.runLeased(ctx, t, b)
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
			d.turn(ctx, pending, b)
			pending, b.Dropped = nil, nil
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
		if w.Reply != nil {
			flush()
			d.outbox.resend(ctx, *w.Reply)
			continue
		}
		if w.Command != "" {
			flush()
			d.command(ctx, w, b)
			continue
		}
		pending = append(pending, expand(w)...)
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

// inputText is what the model sees for one message: in groups the sender's
// name comes first so the agent can tell speakers apart.
func inputText(in channels.Inbound) string {
	if in.ChatType != channels.Direct && in.SenderName != "" {
		return "[" + in.SenderName + "] " + in.Text
	}
	return in.Text
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

// turn runs one agent turn for the messages ws (all of one session).
func (d *Dispatcher) turn(ctx context.Context, ws []*work, b laneBatch) {
	first := ws[0]
	log := d.log.With(zap.Stringer("session_key", first.Key), zap.String("agent_id", first.AgentID))
	store, err := d.opts.Sessions.Store(first.AgentID)
	if err != nil {
		_ = d.journal.Start(recordIDs(ws)...) // a failure counts against a started turn
		d.failed(ctx, ws, log, fmt.Errorf("session store: %w", err))
		return
	}
	if ws = d.recover(ctx, store, ws, log); len(ws) == 0 {
		return
	}
	first, last := ws[0], ws[len(ws)-1]
	ids := recordIDs(ws)
	if err := d.journal.Start(ids...); err != nil {
		log.Error("journal start failed", zap.Error(err))
	}
	origin := originFor(last.In, first.Key)
	if last.Agent != nil {
		origin = sessions.Origin{At: d.opts.Now(), Internal: true}
	}
	if origin.At.IsZero() {
		origin.At = d.opts.Now()
	}
	entry, info, err := store.Begin(ctx, first.Key, origin)
	if err != nil && ctx.Err() != nil {
		// Cancelled while the session began (a backend that waits on a
		// database): what a cancelled run does below, not a failure.
		d.cancelled(ctx, ws, ids, log)
		return
	}
	if err != nil {
		d.failed(ctx, ws, log, fmt.Errorf("session begin: %w", err))
		return
	}
	if info.ResetReason != "" {
		d.opts.Metrics.Resets.WithLabelValues(info.ResetReason).Inc()
		log.Info("session rolled over", zap.String("reason", info.ResetReason), zap.String("previous_session_id", info.Previous))
	}
	mt := mediaTurn{agentID: first.AgentID, sessionID: entry.SessionID, vision: d.opts.Runner.TakesImages(first.AgentID, entry)}
	hist := d.takeHistory(ws, first.Key, entry, info, log)
	var inputs []sessions.Message
	if info.Created {
		if m, ok := d.parentContext(ctx, store, first, origin.At); ok {
			inputs = append(inputs, m)
		}
	}
	if len(b.Dropped) > 0 {
		inputs = append(inputs, sessions.UserText("[queue overflow: "+fmt.Sprint(len(b.Dropped))+
			" earlier messages were dropped]\n"+strings.Join(b.Dropped, "\n"), d.opts.Now()))
	}
	for _, w := range ws {
		switch {
		case w.Consumed:
		case w.Agent != nil:
			m := w.Agent.Message
			m.RecordIDs = recordIDs([]*work{w})
			inputs = append(inputs, m)
		default:
			n := len(inputs)
			if inputs = d.appendUser(ctx, inputs, w, mt); len(inputs) > n {
				inputs[n] = hist.attach(inputs[n]) // the room's kept messages go before the first new input
			}
		}
	}
	deliver := last.Agent == nil || last.Agent.Deliver
	out, adapter := d.replyTarget(store, last)
	out.Answers = answers(ws)
	out.ReplyToMode = d.rt.Load().RoomFor(last.In).ReplyToMode
	if !deliver {
		adapter = nil
	}
	steered := &steerState{}
	room := d.messageRoom(ctx, adapter, out, first.AgentID, ws, hist.ids, log)
	defer d.ackReaction(ctx, adapter, last, reactedTo(room))() // taken off once the answer is out
	stopTyping := d.startTyping(ctx, adapter, out)
	stream := d.startStream(ctx, adapter, out, d.roomOf(last, out), first.Key)
	defer stream.finish()
	start := time.Now()
	res, err := d.opts.Runner.Run(ctx, agents.Turn{
		AgentID: first.AgentID,
		Key:     first.Key,
		Inputs:  inputs,
		Reuse:   len(inputs) == 0 && slices.ContainsFunc(ws, func(w *work) bool { return w.Reuse }),
		Steer:   d.steerFunc(ctx, b, steered, mt),
		// The room's own prompt (groups.<id>.systemPrompt and the like).
		SystemPrompt:     d.roomPrompt(last),
		OnDelta:          joinDelta(d.deltaFunc(ctx, adapter, &out, steered), stream),
		OnTool:           d.toolFunc(ctx, adapter, &out, steered),
		OnStep:           stream.stepFunc(),
		OnInputsAppended: hist.appended,
		Room:             room,
	})
	defer d.recordUsage(ctx, last, res, log) // after the reply: never delays it
	stopTyping()
	stream.stop()
	hist.cut() // the reply's fsync made the inputs durable: drop the history they took
	out = stream.handOver(ctx, out)
	d.opts.Metrics.RunLatency.WithLabelValues(first.AgentID).Observe(time.Since(start).Seconds())
	all := slices.Concat(ws, steered.all())
	d.charge(all, first.AgentID, res.Usage)
	ids = recordIDs(all)
	out.Answers = answers(all)
	if err != nil {
		var ue interface{ UserMessage() string }
		switch {
		case errors.Is(err, context.Canceled) || ctx.Err() != nil:
			d.cancelled(ctx, all, ids, log)
		case errors.As(err, &ue) && !isStorage(err):
			// The model could not answer: the person is told, and that
			// notice is the turn's outcome.
			log.Error("turn failed", zap.Error(err))
			out.Text, out.Failed = ue.UserMessage(), true
			if !deliver {
				d.finish(ids...)
				return
			}
			if d.withholdNotice(ctx, last, all, ids, out.Text) {
				return
			}
			d.outbox.deliver(ctx, first.Key, first.AgentID, ids, out, "")
		default:
			d.failed(ctx, all, log, err)
		}
		return
	}
	if ctx.Err() != nil && leaseLost(ctx, nil) {
		// The lease went while the answer came: another replica may run
		// the session now; the reply is in the transcript for whoever
		// recovers these records.
		d.lostTurn(all, log)
		return
	}
	d.streaks.end(first.Key)
	out.SessionID, out.TokenEstimate = res.SessionID, res.TokenEstimate
	out.Text = res.Text
	if adapter == nil {
		d.finish(ids...)
		return
	}
	if strings.TrimSpace(out.Text) == "" && !isStreamer(adapter) {
		d.finish(ids...)
		return
	}
	if !d.outbox.deliver(ctx, first.Key, first.AgentID, ids, out, res.EntryID) {
		d.lostTurn(all, log)
	}
}

// cancelled ends a turn whose context was cancelled before its outcome:
// at shutdown the records stay pending for the next start; otherwise
// (/stop, interrupt) they are finished and waiting web clients told.
func (d *Dispatcher) cancelled(ctx context.Context, ws []*work, ids []string, log *zap.Logger) {
	if leaseLost(ctx, nil) {
		d.lostTurn(ws, log)
		return
	}
	if ctx.Err() != nil && d.closing.Load() {
		log.Info("turn interrupted by shutdown; will resume at next start")
		_ = d.journal.Abort(ids...)
		return
	}
	log.Info("turn cancelled")
	d.finish(ids...)
	d.release(ctx, ws, "Stopped before an answer was ready.")
}

// userMessage is the transcript message of an inbound message (its
// attachments fetched and resolved, media.go); it carries the record id so
// recovery can tell it was appended.
func (d *Dispatcher) userMessage(ctx context.Context, w *work, mt mediaTurn) sessions.Message {
	at := w.In.Time
	if at.IsZero() {
		at = d.opts.Now()
	}
	in, images := w.In, []sessions.Content(nil)
	if len(in.Attachments) > 0 {
		in, images = d.withMedia(ctx, in, mt)
	}
	m := sessions.UserText(d.withMessageID(w, inputText(in)), at)
	if strings.TrimSpace(inputText(in)) == "" && len(images) > 0 {
		m.Content = nil // an image alone: no empty text block
	}
	m.Content = append(m.Content, images...)
	if w.RecordID != "" {
		m.RecordIDs = []string{w.RecordID}
	}
	return m
}

func recordIDs(ws []*work) []string {
	ids := make([]string, 0, len(ws))
	for _, w := range ws {
		if w.RecordID != "" {
			ids = append(ids, w.RecordID)
		}
	}
	return ids
}

// answers are the inbound message ids a reply to ws answers.
func answers(ws []*work) []string {
	var ids []string
	for _, w := range ws {
		if w.Agent == nil && w.In.MessageID != "" {
			ids = append(ids, w.In.MessageID)
		}
	}
	return ids
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

// steerState collects the messages a run took while it was active (steer
// mode): they finish with the run's reply.
type steerState struct {
	mu    sync.Mutex
	works []*work // guarded by mu
}

func (st *steerState) add(w *work) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.works = append(st.works, w)
}

func (st *steerState) all() []*work {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.works)
}

func (d *Dispatcher) deltaFunc(ctx context.Context, a channels.Adapter, out *channels.Outbound, st *steerState) func(string) {
	s, ok := a.(channels.Streamer)
	if a == nil || !ok {
		return nil
	}
	return func(text string) {
		o := *out
		o.Answers = append(answers(st.all()), out.Answers...)
		s.Delta(ctx, o, text)
	}
}

func (d *Dispatcher) steerFunc(ctx context.Context, b laneBatch, st *steerState, mt mediaTurn) func() []sessions.Message {
	if b.Steer == nil {
		return nil
	}
	return func() []sessions.Message {
		var msgs []sessions.Message
		for _, it := range b.Steer() {
			w, ok := it.Payload.(*work)
			if !ok || w.Command != "" || w.Reply != nil || w.Replayed {
				continue // NoSteer items: lanes does not hand them out
			}
			for _, p := range expand(w) {
				if d.showsMessageIDs(p) { // the model sees its id: the message tool may act on it
					d.noteSeen(ctx, roomRecord(outboundFor(p.In)), []*work{p}, nil, d.log)
				}
				msgs = d.appendUser(ctx, msgs, p, mt)
				st.add(p)
				if err := d.journal.Start(p.RecordID); err != nil {
					d.log.Error("journal start failed", zap.String("record_id", p.RecordID), zap.Error(err))
				}
			}
		}
		return msgs
	}
}
