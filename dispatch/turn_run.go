package dispatch

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// The run step of a turn: the agent runs on the inputs, with the ack
// reaction, the typing indicator and the streamed draft around it, and
// the messages steered into it fed in at its next model call.

// typingEvery is how often the typing indicator is refreshed during a turn.
const typingEvery = 4 * time.Second

// typingDelay is how long a turn runs before its typing indicator is
// shown. The Bot API asks for the action only "when a response from the
// bot will take a noticeable amount of time to arrive": a reply within it
// costs no platform call, and never waits for one still in flight
// (startTyping), while a turn that takes a model's usual seconds shows the
// indicator as before, a blink later (issue 21: the call was a fifth of
// the fakes' and a twentieth of the daemon's CPU per message at load).
const typingDelay = 300 * time.Millisecond

// typingDrain is how long the end of a turn waits for a typing action
// still in flight before cancelling it (startTyping).
const typingDrain = 500 * time.Millisecond

// run aims the reply, runs the agent on inputs and returns its result.
// The ack reaction and the draft stream come off, and the usage row is
// recorded, once the turn is settled (atEnd): never before the reply.
func (t *turn) run(ctx context.Context, inputs []sessions.Message) (agents.Result, error) {
	d, first, last := t.d, t.first, t.last
	t.aim()
	room := d.tool.room(ctx, t.adapter, t.out, first.AgentID, t.ws, t.hist.ids, t.ambient, t.log)
	t.msgRoom = room
	shown := t.adapter // where the turn shows itself working: nowhere for an ambient turn
	if t.ambient {
		shown = nil
	}
	t.atEnd(d.acks.ackReaction(ctx, shown, last, reactedTo(room))) // taken off once the answer is out
	stopTyping := t.startTyping(ctx, shown)
	stream := d.startStream(ctx, shown, t.out, t.room(), first.Key)
	t.atEnd(stream.finish)
	start := time.Now()
	var model string
	if t.ambient {
		model = t.room().Ambient.Model
	}
	sp := t.speaker()
	res, err := d.opts.Runner.Run(ctx, agents.Turn{
		AgentID: first.AgentID,
		Key:     first.Key,
		Entry:   &t.entry,
		Inputs:  inputs,
		Reuse:   len(inputs) == 0 && slices.ContainsFunc(t.ws, func(w *work) bool { return w.Reuse }),
		Steer:   t.steerFunc(ctx, sp),
		// The room's own prompt (groups.<id>.systemPrompt and the like).
		SystemPrompt:     t.roomPrompt(),
		OnDelta:          joinDelta(t.deltaFunc(ctx), stream),
		OnTool:           t.toolFunc(ctx),
		OnStep:           stream.stepFunc(),
		OnInputsAppended: t.hist.appended,
		InputsIn:         t.pre,
		Room:             room,
		Speaker:          sp,
		SteeredSpeaker:   t.steered.speaker(sp),
		JobTarget:        jobTarget(t.last),
		Ambient:          t.ambient,
		Model:            model,
		// A stop for good (/stop, interrupt mode: stoppedForGood, also
		// once the daemon is stopping): not the daemon stopping, nor the
		// lease lost (another replica resumes the run).
		Stopped:    func() bool { return (!d.closing.Load() || stoppedForGood(ctx)) && !leaseLost(ctx, nil) },
		ReplyAhead: t.replyAhead(stream),
	})
	// A usage row stored with the reply (in the answer's append) is not
	// recorded again.
	if !t.ahead.usageTaken() && !d.recordUsageLater(last, res, t.log) {
		t.atEnd(func() { d.recordUsage(ctx, last, res, t.log) }) // after the reply: never delays it
	}
	stopTyping()
	stream.stop()
	t.hist.cut() // the reply's fsync made the inputs durable: drop the history they took
	t.out = stream.handOver(ctx, t.out)
	d.opts.Metrics.RunLatency.WithLabelValues(first.AgentID).Observe(time.Since(start).Seconds())
	return res, err
}

// aim decides where the reply goes: the last message's chat, or for
// internal work the session's last known chat (none when it asked for no
// delivery, or when the session's send policy is deny: its replies are
// recorded in the transcript and not sent, seed 002).
func (t *turn) aim() {
	d := t.d
	t.deliver = (t.last.Agent == nil || t.last.Agent.Deliver) && t.entry.Sends()
	t.out, t.adapter = d.replyTarget(t.store, t.last)
	t.out.Answers = answers(t.ws)
	t.out.ReplyToMode = d.rt.Load().RoomFor(t.last.In).ReplyToMode
	if !t.deliver {
		t.adapter = nil
	}
}

// room is the behaviour of the room the reply goes to (its target, for
// internal work that has no inbound message).
func (t *turn) room() channels.Room {
	in := t.last.In
	if t.last.Agent != nil {
		in = channels.Inbound{Address: t.out.Address}
	}
	return t.d.rt.Load().RoomFor(in)
}

// roomPrompt is the systemPrompt of the room the last message came from
// ("" for internal work).
func (t *turn) roomPrompt() string {
	if t.last.Agent != nil {
		return ""
	}
	return t.d.rt.Load().RoomFor(t.last.In).SystemPrompt
}

// typingWait is typingDelay, or the test's override of it.
func (d *Dispatcher) typingWait() time.Duration {
	if d.typingDelay != 0 {
		return max(d.typingDelay, 0)
	}
	return typingDelay
}

// deltaFunc is agents.Turn.OnDelta for adapters that stream the answer
// (web); nil for others.
func (t *turn) deltaFunc(ctx context.Context) func(string) {
	s, ok := t.adapter.(channels.Streamer)
	if t.adapter == nil || !ok {
		return nil
	}
	return func(text string) {
		o := t.out
		o.Answers = append(answers(t.steered.all()), t.out.Answers...)
		s.Delta(ctx, o, text)
	}
}

// toolFunc is agents.Turn.OnTool for adapters that show tool calls (web).
func (t *turn) toolFunc(ctx context.Context) func(string, json.RawMessage) {
	ts, ok := t.adapter.(channels.ToolStreamer)
	if t.adapter == nil || !ok {
		return nil
	}
	return func(name string, args json.RawMessage) {
		o := t.out
		o.Answers = append(answers(t.steered.all()), t.out.Answers...)
		ts.Tool(ctx, o, name, args)
	}
}

// steerFunc is agents.Turn.Steer in steer modes: the messages of the
// session queued while the run is active, as user messages; they finish
// with the run's reply (steered), except in steer-backlog mode, where they
// stay queued for a turn of their own (work.Steered). A message of
// someone other than sp's sender is noted (steerState.speaker).
func (t *turn) steerFunc(ctx context.Context, sp *agents.Speaker) func() []sessions.Message {
	d := t.d
	if t.b.Steer == nil || t.ambient {
		return nil // an ambient turn sends no answer: what is addressed waits for its own turn
	}
	return func() []sessions.Message {
		var msgs []sessions.Message
		for _, it := range t.b.Steer() {
			w, ok := it.Payload.(*work)
			if !ok || w.Command != "" || w.Reply != nil || w.Replayed || w.Agent != nil {
				continue // NoSteer items: lanes does not hand them out
			}
			// Each part is asked again (revoked.go); in steer-backlog mode
			// what is refused stays queued, and its own turn drops it.
			var parts []*work
			if it.Steered {
				for _, p := range expand(w) {
					if ok, _ := d.stillAdmitted(p); ok {
						parts = append(parts, p)
					}
				}
			} else if w = d.admitted(w); w != nil {
				parts = expand(w)
			}
			var own []sessions.Message
			for _, p := range parts {
				if d.tool.showsMessageIDs(p) { // the model sees its id: the message tool may act on it
					d.tool.noteSeen(ctx, roomRecord(outboundFor(p.In)), []*work{p}, nil, d.log)
				}
				own = d.appendUser(ctx, own, p, t.media)
				if o := speakerOf(p.In); sp != nil && (o.Channel != sp.Channel || o.SenderID != sp.SenderID) {
					t.steered.setOthers()
				}
				if !it.Steered {
					t.steered.add(p) // steer: answered by this run
				} // steer-backlog: still queued, for a turn of its own
				if err := d.journal.Start(p.RecordID); err != nil {
					d.log.Error("journal start failed", zap.String("record_id", p.RecordID), zap.Error(err))
				}
			}
			if it.Steered {
				// steer-backlog: this run's reply does not answer the
				// message (its own turn does, whose note carries its
				// record). Appended with its record id, a restart before
				// that turn found it answered by this run's reply and sent
				// that reply a second time, never running its turn.
				for i := range own {
					own[i].RecordIDs = nil
				}
			}
			msgs = append(msgs, own...)
		}
		return msgs
	}
}

// steerState collects the messages a run took while it was active (steer
// mode): they finish with the run's reply.
type steerState struct {
	mu     sync.Mutex
	works  []*work // guarded by mu
	others bool    // a message of another person was steered in; guarded by mu
}

// setOthers notes that a message of someone other than the turn's sender
// was steered in.
func (st *steerState) setOthers() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.others = true
}

// speaker is agents.Turn.SteeredSpeaker for a turn answering sp: once a
// message of another person was steered in, the turn answers several
// people and has no one sender, as speaker() says of a collect turn.
func (st *steerState) speaker(sp *agents.Speaker) func() *agents.Speaker {
	return func() *agents.Speaker {
		st.mu.Lock()
		defer st.mu.Unlock()
		if sp == nil || !st.others {
			return sp
		}
		c := *sp
		c.SenderID = ""
		return &c
	}
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
