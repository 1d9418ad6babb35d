package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Ambient rooms (issue 24). In a room with ambient on (channels.Room
// .Ambient, off by default) a message the access policy admits but that
// does not address the bot is kept in the room history as in any room
// (durable before its adapter acknowledges it; roomhistory.go). The first
// such message of a batch also journals the batch itself: a record of the
// room's session whose inbound is marked Ambient (the "tick", id
// ambient:<first message id>), durable before the acknowledgement like
// any accepted message. The tick is held here while the room talks: each
// message restarts the debounce window (ambientDebounce), and a batch
// reaching ambientMaxBatch messages goes at once. Then the tick is queued
// on the session's lane and its turn takes the kept messages as room
// events, as an addressed turn would (framed as context, cut once the
// turn's input is in the transcript).
//
// The turn of a tick alone is an ambient turn: before the model runs, the
// room's hourly cap (ambientPerHour, counted by this replica) and the
// limits (the room's and the agent's rate and budgets: limits.Check with
// no sender) are asked; a refused batch is finished without a turn and
// its messages stay in the history for the next turn. An ambient turn
// runs on the room's ambientModel when set, is offered the message tool
// and shows no typing, ack reaction or draft; its final text is never
// sent: the agent speaks only through the tool, or stays silent. Its
// usage is charged like any turn's (the room's and the agent's budgets).
// A failed ambient turn is logged and finished: nobody asked, so nobody
// is told. A tick queued with addressed messages of the same session adds
// nothing to their turn (its events go with them) and finishes with it.
//
// A mention or a reply to the bot is an addressed message and runs a
// normal turn, which takes the kept messages too; a tick that then finds
// nothing left finishes without calling the model. A sender the access
// policy refuses never reaches the history, so never a batch.
//
// After a crash a held tick, or one whose turn died before its input
// reached the transcript, is pending in the journal and runs at the next
// start (without waiting a window), taking what the history holds then.
// At shutdown the held ticks' windows stop and their records stay
// pending. The reply the tool posts is sent at once (it is the tool's
// action, as in any turn), not through the outbox; a tick whose input is
// in the transcript is never run again (replayed.go: its batch was taken,
// so the replay finds nothing to read), so a post interrupted by a crash
// is sent at most once, and a tick whose turn had ended is finished
// without sending its final text.

// ambientText is the tick's input: what the agent is told after the room
// events (framed before it by the room context).
const ambientText = "[Room events] The messages above were posted in this chat; none of them addressed you. " +
	"Nothing you write in this turn is shown to anyone. Speak only if you have something clearly useful to add: " +
	"then post it with the message tool (action reply; its messageId answers that message, without one your reply " +
	"answers the newest). Otherwise end the turn without calling the tool."

// ambientPrefix starts a tick's message id.
const ambientPrefix = "ambient:"

// Outcomes of an ambient batch (gateway_ambient_batches_total).
const (
	AmbientSilent    = "silent"     // the turn ran and sent nothing
	AmbientSpoke     = "spoke"      // the turn posted through the message tool
	AmbientHourlyCap = "hourly_cap" // the room's ambientPerHour was reached
	AmbientThrottled = "throttled"  // the limits refused it
	AmbientEmpty     = "empty"      // an addressed turn took its messages first
	AmbientFailed    = "failed"     // the turn failed
)

// ambientRooms holds the ticks being debounced and the batches each room
// sent in the last hour. Its lock is never held across I/O or while
// calling into lanes; the timers it starts are stopped by close.
type ambientRooms struct {
	mu     sync.Mutex
	held   map[routing.Key]*heldTick   // guarded by mu
	sent   map[routing.Key][]time.Time // guarded by mu: batch times within the last hour
	closed bool                        // guarded by mu
}

// heldTick is one room's batch waiting for its window.
type heldTick struct {
	w     *work
	n     int    // messages in the batch
	gen   uint64 // bumped by each message; a timer of an older gen is stale
	timer *time.Timer
}

// ambientKeep adds in, an unaddressed message just kept in its room's
// history, to the room's batch: it joins the held one, or journals a new
// tick. An error is the journal's (the adapter delivers the message again).
func (d *Dispatcher) ambientKeep(ctx context.Context, rt *Runtime, in channels.Inbound, room channels.Room) error {
	route, err := rt.Route(in)
	if err != nil {
		return nil // keepUnaddressed logged it
	}
	k := route.Key.Canonical()
	if held, full := d.ambient.join(k, room.Ambient, d.ambientFire(k)); held {
		if full != nil {
			d.enqueue(ctx, full)
		}
		return nil
	}
	tick := ambientInbound(in)
	w := &work{RecordID: RecordID(tick), AgentID: route.AgentID, Key: k,
		chatMessage: chatMessage{In: tick}, recordState: recordState{AcceptedAt: d.opts.Now()}}
	w.HistoryMark = d.opts.Sessions.History().Seq()
	payload, err := json.Marshal(envelope{Inbound: &tick, History: w.HistoryMark})
	if err != nil {
		return fmt.Errorf("dispatch: ambient: encode: %w", err)
	}
	dup, err := d.accept(ctx, sessions.Record{ID: w.RecordID, AgentID: w.AgentID, SessionKey: k.String(),
		Payload: payload, AcceptedAt: w.AcceptedAt})
	if err != nil {
		d.recovery.acceptFailed(w, err)
		if isStorage(err) {
			d.opts.Metrics.StorageErrors.Inc()
			return fmt.Errorf("dispatch: ambient: journal: %w: %w", channels.ErrUnavailable, err)
		}
		return fmt.Errorf("dispatch: ambient: journal: %w", err)
	}
	if dup || !d.recovery.accepted(w.RecordID) {
		return nil // a redelivery: the tick is pending already
	}
	if !d.ambient.hold(k, w, room.Ambient, d.ambientFire(k)) {
		d.enqueue(ctx, w) // shutting down or no window: the journal has it
	}
	return nil
}

// ambientInbound is the tick of the batch in starts: in's room, no sender.
func ambientInbound(in channels.Inbound) channels.Inbound {
	return channels.Inbound{Address: in.Address, MessageID: ambientPrefix + in.MessageID, ChatType: in.ChatType,
		GuildID: in.GuildID, ParentChatID: in.ParentChatID, CaseSensitive: in.CaseSensitive, Text: ambientText,
		Time: in.Time, Ambient: true}
}

// ambientFire is the window's end for key's batch of generation gen.
func (d *Dispatcher) ambientFire(k routing.Key) func(gen uint64) {
	return func(gen uint64) {
		if w := d.ambient.takeGen(k, gen); w != nil {
			d.enqueue(context.Background(), w)
		}
	}
}

// join counts one more message into k's held batch and restarts its
// window. held is false when no batch is held (the caller journals one);
// full is the batch's tick when the message filled it (the caller queues
// it now).
func (a *ambientRooms) join(k routing.Key, cfg channels.AmbientConfig, fire func(uint64)) (held bool, full *work) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.held[k]
	if t == nil {
		return false, nil
	}
	t.n++
	if t.n >= cfg.MaxBatch {
		return true, a.removeLocked(k, t)
	}
	a.restartLocked(t, cfg.Debounce, fire)
	return true, nil
}

// restartLocked starts t's window again.
func (a *ambientRooms) restartLocked(t *heldTick, win time.Duration, fire func(uint64)) {
	t.gen++
	if t.timer != nil {
		t.timer.Stop()
	}
	gen := t.gen
	t.timer = time.AfterFunc(win, func() { fire(gen) })
}

// hold keeps w, a new tick, for k's window; false when it cannot be held
// (closed, or a batch of one message is full).
func (a *ambientRooms) hold(k routing.Key, w *work, cfg channels.AmbientConfig, fire func(uint64)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || cfg.MaxBatch <= 1 || cfg.Debounce <= 0 {
		return false
	}
	if a.held == nil {
		a.held = map[routing.Key]*heldTick{}
	}
	if old := a.held[k]; old != nil {
		// Another message journaled a tick at the same moment: both run
		// (the second finds the history taken and finishes at no cost).
		return false
	}
	t := &heldTick{w: w, n: 1}
	a.held[k] = t
	a.restartLocked(t, cfg.Debounce, fire)
	return true
}

// removeLocked forgets t and returns its tick.
func (a *ambientRooms) removeLocked(k routing.Key, t *heldTick) *work {
	if t.timer != nil {
		t.timer.Stop()
	}
	delete(a.held, k)
	return t.w
}

// takeGen removes k's held tick when no message came since generation gen
// and returns it.
func (a *ambientRooms) takeGen(k routing.Key, gen uint64) *work {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.held[k]; t != nil && t.gen == gen {
		return a.removeLocked(k, t)
	}
	return nil
}

// close stops every window at shutdown; the held ticks stay pending in
// the journal and run at the next start. It returns how many were held.
func (a *ambientRooms) close() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	n := len(a.held)
	for k, t := range a.held {
		a.removeLocked(k, t)
	}
	return n
}

// allow reports whether k may send one more batch under perHour now, and
// counts it when it may.
func (a *ambientRooms) allow(k routing.Key, perHour int, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent == nil {
		a.sent = map[routing.Key][]time.Time{}
	}
	times := a.sent[k]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= time.Hour {
		i++
	}
	times = times[i:]
	if perHour > 0 && len(times) >= perHour {
		a.sent[k] = times
		return false
	}
	a.sent[k] = append(times, now)
	return true
}

// ambientTurn reports whether ws (one turn's work) are ambient ticks only.
func ambientTurn(ws []*work) bool {
	for _, w := range ws {
		if w.Agent != nil || !w.In.Ambient {
			return false
		}
	}
	return len(ws) > 0
}

// ambientGate asks the room's hourly cap and the limits whether t, an
// ambient turn, may run; a refused one is finished (its messages stay in
// the history) and false returned.
func (t *turn) ambientGate(ctx context.Context) bool {
	d, w := t.d, t.last
	room := d.rt.Load().RoomFor(w.In)
	outcome := ""
	switch {
	case !room.Ambient.On || !room.Enabled:
		outcome = AmbientEmpty // turned off since: the history waits for an addressed turn
	case !d.ambient.allow(w.Key, room.Ambient.PerHour, d.opts.Now()):
		outcome = AmbientHourlyCap
	case d.opts.Limits != nil:
		dec := d.opts.Limits.Check(ctx, limits.Subject{AgentID: w.AgentID, Channel: w.In.Channel, ChatID: w.In.ChatID})
		if !dec.Allow {
			outcome = AmbientThrottled
			t.log.Info("ambient batch throttled", zap.String("scope", dec.Scope), zap.String("kind", dec.Kind))
			break
		}
		w.Hold = dec.Hold
	}
	if outcome == "" {
		return true
	}
	d.opts.Metrics.Ambient.WithLabelValues(outcome).Add(float64(len(t.ws))) // a lane may join batches into one turn
	t.log.Debug("ambient batch not run", zap.String("outcome", outcome))
	d.finish(recordIDs(t.ws)...)
	return false
}

// ambientSettle ends an ambient turn: nothing is sent but what the message
// tool posted; a failure is logged and the batch finished.
func (t *turn) ambientSettle(ids []string, err error, spoke bool) {
	d := t.d
	outcome := AmbientSilent
	switch {
	case err != nil:
		outcome = AmbientFailed
		t.log.Warn("ambient turn failed; its batch is dropped", zap.Error(err))
	case spoke:
		outcome = AmbientSpoke
	}
	d.opts.Metrics.Ambient.WithLabelValues(outcome).Add(float64(len(ids)))
	d.finish(ids...)
}
