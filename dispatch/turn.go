package dispatch

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// turn is one agent turn over messages of one session, run on its lane in
// the steps of SPEC §3.7:
//
//   - begin: what the transcript already holds of replayed messages is
//     recovered, the records are started and the session is begun;
//   - inputs: what the model is given (a new thread's parent context, the
//     queue's overflow note for the dropped messages among ws (overflow.go),
//     each message not yet in the transcript, the
//     room's kept messages before the first);
//   - run: the agent runs, with the ack reaction, the typing indicator and
//     the streamed draft around it and steered messages fed in;
//   - settle: the outcome is recorded for every message it answered: a
//     reply through the outbox, a failure notice, a failure counted, or
//     the records left for the next start.
//
// A turn lives on its lane's goroutine; only steered (guarded by its own
// lock) is touched by the runner's callbacks.
type turn struct {
	d   *Dispatcher
	b   laneBatch // the lane run the turn belongs to (its steering)
	log *zap.Logger

	ws          []*work // the turn's messages, in order (after begin: those still to run)
	first, last *work
	ids         []string // ws's record ids

	// Set by begin.
	store  sessions.AgentStore
	origin sessions.Origin
	entry  sessions.Entry
	info   sessions.BeginInfo
	media  mediaTurn
	hist   *roomContext // the room's kept messages the turn takes
	// ambient: the turn's work is ambient batches only (ambient.go).
	ambient bool
	// msgRoom is the message tool's room of the turn (nil: none); set by run.
	msgRoom agents.Room

	// Set by run: where the reply goes; adapter is nil when it is not
	// delivered (deliver false: internal work that asked for none).
	out     channels.Outbound
	adapter channels.Adapter
	deliver bool
	steered steerState // messages the run took while active (steer mode)
	// ahead is the reply handed to the final answer's append (nil: none;
	// turn_ahead.go); set by the runner's call of replyAhead.
	ahead *aheadReply
	// pre are the inputs handed to Begin (nil: none; turn_inputs_ahead.go).
	pre *sessions.InputsAhead

	// ends are undone, last first, once the turn is settled (the ack
	// reaction, the draft stream, the usage row); endsBuf holds the usual
	// few in the turn itself, not in a slice grown per message.
	ends    []func()
	endsBuf [4]func()
}

// runTurn runs one agent turn for ws (all of one session; b is the lane
// run they came in).
func (d *Dispatcher) runTurn(ctx context.Context, ws []*work, b laneBatch) {
	t := &turn{d: d, b: b, ws: ws, first: ws[0],
		log: d.log.WithLazy(zap.Stringer("session_key", ws[0].Key), zap.String("agent_id", ws[0].AgentID))}
	t.ends = t.endsBuf[:0]
	defer t.end()
	// Whatever way the turn ends, its messages' budget holds go (settle's
	// charge drops them first when it gets there).
	defer d.releaseHolds(ws...)
	if !t.begin(ctx) {
		return
	}
	res, err := t.run(ctx, t.turnInputs(ctx))
	t.settle(ctx, res, err)
}

// atEnd has f run once the turn is settled (before what was added earlier).
func (t *turn) atEnd(f func()) { t.ends = append(t.ends, f) }

// end runs what atEnd collected, last first.
func (t *turn) end() {
	for i := len(t.ends) - 1; i >= 0; i-- {
		t.ends[i]()
	}
}

// begin recovers what the transcript holds of replayed messages, starts
// the records and begins the session. It reports whether the turn goes
// on; when it does not, the messages were settled here.
func (t *turn) begin(ctx context.Context) bool {
	d := t.d
	store, err := d.opts.Sessions.Store(t.first.AgentID)
	if err != nil {
		_ = d.journal.Start(recordIDs(t.ws)...) // a failure counts against a started turn
		d.fails.failed(ctx, t.ws, t.log, fmt.Errorf("session store: %w", err))
		return false
	}
	t.store = store
	if t.ws = d.fails.recover(ctx, store, t.ws, t.log); len(t.ws) == 0 {
		return false
	}
	for _, w := range t.ws { // queued before its chat moved (moved.go)
		if k := d.moves.resolve(w.Key); k != w.Key {
			w.Key = k
		}
	}
	if !t.dropEndedAnnouncements() {
		return false
	}
	t.first, t.last = t.ws[0], t.ws[len(t.ws)-1]
	if t.childGone() {
		return false
	}
	t.ids = recordIDs(t.ws)
	if t.ambient = ambientTurn(t.ws); t.ambient && !t.ambientGate(ctx) {
		return false
	}
	for _, w := range t.ws {
		if w.In.Ambient { // a batch takes what its room kept until it runs
			w.HistoryMark = d.opts.Sessions.History().Seq()
		}
	}
	if err := d.journal.Start(t.ids...); err != nil {
		t.log.Error("journal start failed", zap.Error(err))
	}
	t.origin = originFor(t.last.In, t.first.Key)
	// The reset policy is judged when the batch's last message arrived,
	// not now: one queued behind a turn that ran past the daily boundary
	// (or journaled across a restart) stays in the session it arrived in.
	t.origin.Arrived = t.last.AcceptedAt
	if t.last.Agent != nil {
		t.origin = sessions.Origin{At: d.opts.Now(), Internal: true}
	}
	if t.origin.At.IsZero() {
		t.origin.At = d.opts.Now()
	}
	bctx := ctx
	if t.pre = t.inputsAhead(ctx); t.pre != nil {
		bctx = sessions.WithInputsAhead(ctx, t.pre)
	}
	t.entry, t.info, err = store.Begin(bctx, t.first.Key, t.origin)
	if err != nil && ctx.Err() != nil {
		// Cancelled while the session began (a backend that waits on a
		// database): what a cancelled run does, not a failure.
		t.cancelled(ctx, t.ws, t.ids)
		return false
	}
	if err != nil {
		d.fails.failed(ctx, t.ws, t.log, fmt.Errorf("session begin: %w", err))
		return false
	}
	t.modelGone(ctx)
	d.queues.note(t.first.Key, t.entry)
	d.outbox.notePlaced(t.first.AgentID, t.first.Key, t.entry.DeliveryContext)
	if t.info.ResetReason != "" {
		d.opts.Metrics.Resets.WithLabelValues(t.info.ResetReason).Inc()
		t.log.Info("session rolled over", zap.String("reason", t.info.ResetReason), zap.String("previous_session_id", t.info.Previous))
	}
	t.media = mediaTurn{agentID: t.first.AgentID, sessionID: t.entry.SessionID, vision: d.opts.Runner.TakesImages(t.first.AgentID, t.entry)}
	t.hist = d.history.take(t.ws, t.first.Key, t.store, t.entry, t.info, t.log)
	if t.ambient && t.hist.seq == 0 {
		// An addressed turn took the batch's messages: nothing to read.
		d.opts.Metrics.Ambient.WithLabelValues(AmbientEmpty).Add(float64(len(t.ws)))
		d.finish(t.ids...)
		return false
	}
	return true
}
